package main

// The pods KubeRay would create for a RayJob, RayCluster or RayService, made with its own builders, and the
// apiserver's create path for pods on each.

import (
	"context"
	"fmt"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/common"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/storage/names"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1defaults "k8s.io/kubernetes/pkg/apis/core/v1"
	podstore "k8s.io/kubernetes/pkg/registry/core/pod"
)

// built is one pod KubeRay would create, the template the user wrote for it and that template's path.
type built struct {
	role     string
	template string // e.g. "spec.rayClusterSpec.workerGroupSpecs[0].template"
	pod      corev1.Pod
	user     corev1.PodTemplateSpec
	count    int // how many such pods the job has (a worker group's desired replicas times its hosts, as KubeRay counts them)
}

// check builds the object's pods with KubeRay's code and takes each through the apiserver's create
// path in its namespace (`related`: the namespace's LimitRanges and ResourceQuotas on the cluster, the cluster's
// RuntimeClasses). An
// object that is no RayJob, RayCluster or RayService, or does not decode (the CRD checks report that), has no pods.
func check(obj map[string]interface{}, related []map[string]interface{}) (r result) {
	r.Errors, r.Quota, r.Security = []fieldError{}, []fieldError{}, []fieldError{}
	defer func() {
		// KubeRay's builders assume a spec its controller validated first: the caller reports this only when
		// every earlier stage accepted the object (else that stage's refusal is the finding).
		if p := recover(); p != nil {
			msg := fmt.Sprintf("KubeRay's pod builders fail on this object: %v", p)
			r = result{Errors: []fieldError{{Type: "InternalError", Detail: msg, Message: msg}}, Quota: []fieldError{}, Security: []fieldError{}}
		}
	}()
	ns, err := namespaceOf(related)
	if err != nil {
		return r // the schema check of that object reports it
	}
	pods := podsOf(obj)
	if len(pods) > 0 {
		r.Pods = map[string]*corev1.Pod{}
	}
	var admitted []charged
	for _, b := range pods {
		if b.pod.GenerateName != "" && len(b.pod.Name) == len(b.pod.GenerateName)+5 && strings.HasPrefix(b.pod.Name, b.pod.GenerateName) {
			b.pod.Name = stable(b.pod.Name) // KubeRay's random suffix (utils.PodName)
		}
		pod := b.pod
		r.Pods[b.role] = &pod
		defaulted := b.pod.DeepCopy()
		corev1defaults.SetObjectDefaults_Pod(defaulted) // the apiserver's defaults of the v1 API
		internal, causes := validate(*defaulted, ns)
		if len(causes) == 0 {
			if refused := ns.securityError(*defaulted, b.template); refused != nil {
				r.Security = append(r.Security, *refused)
			} else {
				admitted = append(admitted, charged{internal, corev1.Resource("pods"), b.count, b.role + " pod", ""})
			}
		}
		written := map[string]bool{}
		for _, c := range causes {
			if !injected(c.Field, b.user) {
				written[c.Message] = true
			}
		}
		for _, c := range causes {
			if injected(c.Field, b.user) {
				if written[c.Message] {
					continue // KubeRay's copy of what the user wrote (its init container repeats the mounts): reported there
				}
				c.Field = "" // something KubeRay added fails: reported at the template
				if c.Type == metav1.CauseTypeForbidden {
					c.Message += " (a container KubeRay adds to the pod, with the resources KubeRay gives it, not one of the template's)"
				}
			}
			r.Errors = append(r.Errors, located(c, b.template))
		}
	}
	errs, submitter := submitterJobErrors(obj)
	r.Errors, r.Submitter = append(r.Errors, errs...), submitter
	if len(r.Errors) == 0 {
		r.Quota = append(r.Quota, ns.quotaErrors(append(admitted, createdObjects(obj, submitter)...))...)
	}
	return r
}

// injected tells whether a pod's field lies in a container, init container or volume that KubeRay
// added to the template the user wrote.
func injected(field string, user corev1.PodTemplateSpec) bool {
	for list, written := range map[string]int{"spec.containers[": len(user.Spec.Containers),
		"spec.initContainers[": len(user.Spec.InitContainers), "spec.volumes[": len(user.Spec.Volumes)} {
		var i int
		if rest, ok := strings.CutPrefix(field, list); ok {
			if _, err := fmt.Sscanf(rest, "%d]", &i); err == nil && i >= written {
				return true
			}
		}
	}
	return false
}

func podsOf(obj map[string]interface{}) []built {
	m, ok := madeOf(obj)
	if !ok {
		return nil
	}
	ctx := context.Background()
	cluster := m.cluster
	if m.job != nil && m.job.Spec.SubmissionMode == rayv1.SidecarMode {
		// KubeRay's RayJob controller adds its default submitter container to the head pod (rayjob_controller.go,
		// constructRayClusterForRayJob: getSubmitterContainer, then RestartPolicy Never); its command and environment
		// (configureSubmitterContainer) change nothing that is validated or scheduled.
		cluster.Spec = *cluster.Spec.DeepCopy()
		head := &cluster.Spec.HeadGroupSpec.Template.Spec
		head.Containers = append(head.Containers, common.GetDefaultSubmitterContainer(&cluster.Spec))
		head.RestartPolicy = corev1.RestartPolicyNever
	}
	out := clusterPods(ctx, cluster, m.spec)
	if job := m.job; job != nil && (job.Spec.SubmissionMode == "" || job.Spec.SubmissionMode == rayv1.K8sJobMode) {
		// The submitter Job's pods (KubeRay then sets the container's command and environment).
		template := common.GetSubmitterTemplate(&job.Spec, &cluster.Spec)
		pod := corev1.Pod{ObjectMeta: template.ObjectMeta, Spec: template.Spec}
		pod.GenerateName, pod.Namespace = job.Name+"-", cluster.Namespace
		var user corev1.PodTemplateSpec
		if job.Spec.SubmitterPodTemplate != nil {
			user = *job.Spec.SubmitterPodTemplate
		}
		out = append(out, built{"submitter", "spec.submitterPodTemplate", pod, user, 1})
	}
	return out
}

// made is what KubeRay's controllers start from for a Ray object: the RayCluster (a RayCluster itself, or the one the
// RayJob's or RayService's controller creates, with the object's annotations as it copies them) and the path of the
// cluster spec in the object the user wrote, the RayJob or the RayService.
type made struct {
	cluster rayv1.RayCluster
	spec    string
	job     *rayv1.RayJob
	service *rayv1.RayService
}

// madeOf: false for an object that is no RayJob, RayCluster or RayService, does not decode (the CRD checks report
// that), or a RayJob on an existing cluster (clusterSelector).
func madeOf(obj map[string]interface{}) (made, bool) {
	if obj["apiVersion"] != rayv1.GroupVersion.String() {
		return made{}, false
	}
	u := &unstructured.Unstructured{Object: obj}
	if u.GetName() == "" && u.GetGenerateName() != "" { // `kubectl create` of a generateName: the apiserver names it first
		u = u.DeepCopy()
		u.SetName(stable(names.SimpleNameGenerator.GenerateName(u.GetGenerateName())))
		obj = u.Object
	}
	switch obj["kind"] {
	case "RayJob":
		job := &rayv1.RayJob{}
		if runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj, job, true) != nil || job.Spec.RayClusterSpec == nil ||
			len(job.Spec.ClusterSelector) > 0 {
			return made{}, false
		}
		return made{cluster: rayv1.RayCluster{
			ObjectMeta: metav1.ObjectMeta{Name: stable(utils.GenerateRayClusterName(job.Name)), Namespace: namespaceName(job.Namespace),
				Labels: map[string]string{utils.RayOriginatedFromCRDLabelKey: utils.RayOriginatedFromCRDLabelValue(utils.RayJobCRD),
					utils.RayOriginatedFromCRNameLabelKey: job.Name}, Annotations: job.Annotations},
			Spec: *job.Spec.RayClusterSpec.DeepCopy(),
		}, spec: "spec.rayClusterSpec", job: job}, true
	case "RayCluster":
		cluster := rayv1.RayCluster{}
		if runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj, &cluster, true) != nil {
			return made{}, false
		}
		cluster.Namespace = namespaceName(cluster.Namespace)
		return made{cluster: cluster, spec: "spec"}, true
	case "RayService":
		svc := &rayv1.RayService{}
		if runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj, svc, true) != nil {
			return made{}, false
		}
		svc.Namespace = namespaceName(svc.Namespace)
		return made{cluster: rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: svc.Name, Namespace: svc.Namespace,
			Labels:      map[string]string{utils.RayOriginatedFromCRDLabelKey: utils.RayOriginatedFromCRDLabelValue(utils.RayServiceCRD)},
			Annotations: svc.Annotations}, Spec: *svc.Spec.RayClusterSpec.DeepCopy()}, spec: "spec.rayClusterConfig", service: svc}, true
	}
	return made{}, false
}

func namespaceName(ns string) string {
	if ns == "" {
		return "default"
	}
	return ns
}

// clusterPods are the head pod and one pod of each worker group, as RayClusterReconciler's buildHeadPod
// and buildWorkerPod make them (without the operator's optional sidecar and default-environment flags).
func clusterPods(ctx context.Context, cluster rayv1.RayCluster, spec string) []built {
	for i := range cluster.Spec.WorkerGroupSpecs {
		if cluster.Spec.WorkerGroupSpecs[i].NumOfHosts == 0 {
			cluster.Spec.WorkerGroupSpecs[i].NumOfHosts = 1 // the CRD's default, which the apiserver applies
		}
	}
	fqdnRayIP := utils.GenerateFQDNServiceName(ctx, cluster, cluster.Namespace)
	headPort := common.GetHeadPort(cluster.Spec.HeadGroupSpec.RayStartParams)
	autoscaling := utils.IsAutoscalingEnabled(&cluster.Spec)
	creator := utils.GetCRDType(cluster.Labels[utils.RayOriginatedFromCRDLabelKey])
	headName := utils.PodName(cluster.Name, rayv1.HeadNode, !utils.IsDeterministicHeadPodNameEnabled())
	head := common.DefaultHeadPodTemplate(ctx, cluster, cluster.Spec.HeadGroupSpec, headName, headPort)
	out := []built{{"head", spec + ".headGroupSpec.template", common.BuildPod(ctx, head, rayv1.HeadNode,
		cluster.Spec.HeadGroupSpec.RayStartParams, headPort, autoscaling, creator, fqdnRayIP, nil, cluster.Spec.RayVersion),
		cluster.Spec.HeadGroupSpec.Template, 1}}
	for i, group := range cluster.Spec.WorkerGroupSpecs {
		name := utils.PodName(fmt.Sprintf("%s-%s", cluster.Name, group.GroupName), rayv1.WorkerNode, true)
		worker := common.DefaultWorkerPodTemplate(ctx, cluster, group, name, fqdnRayIP, headPort, "", 0, 0)
		out = append(out, built{fmt.Sprintf("worker %s", group.GroupName), fmt.Sprintf("%s.workerGroupSpecs[%d].template", spec, i),
			common.BuildPod(ctx, worker, rayv1.WorkerNode, group.RayStartParams, headPort, autoscaling, creator, fqdnRayIP, nil, cluster.Spec.RayVersion),
			group.Template, int(utils.GetWorkerGroupDesiredReplicas(group))})
	}
	return out
}

// validate is the apiserver's create of a pod (already defaulted) in its namespace: conversion to the internal
// type, the LimitRanger's defaults, then the pod REST strategy (beforeCreate). The errors are the
// Invalid status's causes, with the field under the pod.
func validate(pod corev1.Pod, ns namespaceObjects) (*api.Pod, []metav1.StatusCause) {
	internal := &api.Pod{}
	if err := corev1defaults.Convert_v1_Pod_To_core_Pod(&pod, internal, nil); err != nil {
		return nil, []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec", Message: err.Error()}}
	}
	if err := ns.admitted(internal); err != nil {
		return nil, []metav1.StatusCause{{Type: metav1.CauseTypeForbidden, Field: refusalField(err), Message: err.Error()}}
	}
	if causes := beforeCreate(podstore.Strategy, genericapirequest.WithNamespace(context.Background(), internal.Namespace), internal); len(causes) > 0 {
		return internal, causes
	}
	return internal, append(ns.limitErrors(internal), ns.classes.validate(internal)...) // the validating admission, in plugin order
}

// located is the cause with its field under the template the pod came from.
func located(cause metav1.StatusCause, template string) fieldError {
	path := cause.Field
	switch {
	case strings.HasPrefix(path, "spec.") || strings.HasPrefix(path, "metadata.") || path == "spec" || path == "metadata":
		path = template + "." + path
	default:
		path = template
	}
	cause.Field = path
	return causeError(cause)
}
