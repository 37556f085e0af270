// Command podcheck validates the pods KubeRay would create for a RayJob or RayCluster the way the
// pinned kube-apiserver validates a pod on create, offline, with both projects' own code:
// KubeRay's pod builders (controllers/ray/common: DefaultHeadPodTemplate, DefaultWorkerPodTemplate,
// BuildPod, GetSubmitterTemplate, as its controllers call them) make each pod, then Kubernetes'
// defaulting (pkg/apis/core/v1), conversion and pod validation (pkg/apis/core/validation
// ValidatePodCreate, with the options pkg/api/pod derives) judge it.
//
// The RayJob and RayCluster CRDs carry the pod template's OpenAPI schema without the apiserver's pod
// validation: a fractional GPU, GPU requests other than limits, an uppercase container name or a mount
// of an undeclared volume pass the apiserver and Kueue on the RayJob, which Kueue admits; then every
// pod KubeRay creates is refused and the job holds its quota without running. This is a process of its
// own because k8s.io/kubernetes and Kueue (linked by tools/fluxbuild) register a feature gate of the
// same name (DynamicResourceAllocation) into one registry, which cannot share a process.
//
// Protocol (as tools/fluxbuild): one JSON request per line on stdin, {"id": N, "op": "pods",
// "objects": [...][, "with_pods": true]}; one answer line per request, {"id": N, "answer": [result]} or
// {"id": N, "error": "..."}, one result per object: {"errors": [{"field", "type", "detail", "message"}]
// [, "pods": {role: pod}]}.
// A field names the path in the object the user wrote (the template the pod came from).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/go-logr/logr"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/common"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	api "k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install" // the apiserver's scheme of the core group (the pod strategy's)
	corev1defaults "k8s.io/kubernetes/pkg/apis/core/v1"
	podstore "k8s.io/kubernetes/pkg/registry/core/pod"
	ctrl "sigs.k8s.io/controller-runtime"
)

type request struct {
	ID      int                      `json:"id"`
	Op      string                   `json:"op"`
	Objects []map[string]interface{} `json:"objects,omitempty"`
	// WithPods: the answer carries the pods too (the parity test creates them on a real apiserver).
	WithPods bool `json:"with_pods,omitempty"`
}

type fieldError struct {
	Field   string `json:"field"`
	Type    string `json:"type"`
	Detail  string `json:"detail"`
	Message string `json:"message"`
}

type result struct {
	Errors []fieldError           `json:"errors"`
	Pods   map[string]*corev1.Pod `json:"pods,omitempty"`
}

func main() {
	ctrl.SetLogger(logr.Discard()) // KubeRay's builders log through controller-runtime
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	enc := json.NewEncoder(os.Stdout)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) == 0 && err == io.EOF {
			return
		}
		if err != nil && err != io.EOF {
			fatal("reading request: %v", err)
		}
		var req request
		if err := json.Unmarshal(line, &req); err != nil {
			fatal("reading request: %v", err)
		}
		resp := map[string]interface{}{"id": req.ID}
		if req.Op != "pods" {
			resp["error"] = fmt.Sprintf("unknown op %q", req.Op)
		} else {
			results := make([]result, len(req.Objects))
			for i, obj := range req.Objects {
				if results[i] = check(obj); !req.WithPods {
					results[i].Pods = nil
				}
			}
			resp["answer"] = results
		}
		if err := enc.Encode(resp); err != nil {
			fatal("%v", err)
		}
	}
}

func fatal(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "podcheck: "+format+"\n", args...)
	os.Exit(2)
}

// built is one pod KubeRay would create, the template the user wrote for it and that template's path.
type built struct {
	role     string
	template string // e.g. "spec.rayClusterSpec.workerGroupSpecs[0].template"
	pod      corev1.Pod
	user     corev1.PodTemplateSpec
}

// check builds the object's pods with KubeRay's code and validates each as the apiserver does. An object
// that is no RayJob or RayCluster, or does not decode (the CRD checks report that), has no pods.
func check(obj map[string]interface{}) (r result) {
	r.Errors = []fieldError{}
	defer func() {
		if p := recover(); p != nil { // KubeRay's builders assume a spec its controller validated first
			r = result{Errors: []fieldError{}}
		}
	}()
	pods := podsOf(obj)
	if len(pods) > 0 {
		r.Pods = map[string]*corev1.Pod{}
	}
	for _, b := range pods {
		pod := b.pod
		r.Pods[b.role] = &pod
		causes := validate(b.pod)
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
			}
			r.Errors = append(r.Errors, located(c, b.template))
		}
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
	if obj["apiVersion"] != rayv1.GroupVersion.String() {
		return nil
	}
	ctx := context.Background()
	switch obj["kind"] {
	case "RayJob":
		job := &rayv1.RayJob{}
		if runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj, job, true) != nil || job.Spec.RayClusterSpec == nil ||
			len(job.Spec.ClusterSelector) > 0 {
			return nil
		}
		cluster := rayv1.RayCluster{
			ObjectMeta: metav1.ObjectMeta{Name: utils.GenerateRayClusterName(job.Name), Namespace: namespace(job.Namespace),
				Labels: map[string]string{utils.RayOriginatedFromCRDLabelKey: utils.RayOriginatedFromCRDLabelValue(utils.RayJobCRD),
					utils.RayOriginatedFromCRNameLabelKey: job.Name}},
			Spec: *job.Spec.RayClusterSpec.DeepCopy(),
		}
		out := clusterPods(ctx, cluster, "spec.rayClusterSpec")
		if job.Spec.SubmissionMode == "" || job.Spec.SubmissionMode == rayv1.K8sJobMode {
			// The submitter Job's pods (KubeRay then sets the container's command and environment).
			template := common.GetSubmitterTemplate(&job.Spec, &cluster.Spec)
			pod := corev1.Pod{ObjectMeta: template.ObjectMeta, Spec: template.Spec}
			pod.GenerateName, pod.Namespace = job.Name+"-", cluster.Namespace
			var user corev1.PodTemplateSpec
			if job.Spec.SubmitterPodTemplate != nil {
				user = *job.Spec.SubmitterPodTemplate
			}
			out = append(out, built{"submitter", "spec.submitterPodTemplate", pod, user})
		}
		return out
	case "RayCluster":
		cluster := rayv1.RayCluster{}
		if runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj, &cluster, true) != nil {
			return nil
		}
		cluster.Namespace = namespace(cluster.Namespace)
		return clusterPods(ctx, cluster, "spec")
	}
	return nil
}

func namespace(ns string) string {
	if ns == "" {
		return "default"
	}
	return ns
}

// clusterPods are the head pod and one pod of each worker group, as RayClusterReconciler's buildHeadPod
// and buildWorkerPod make them (without the operator's optional sidecar and default-environment flags).
func clusterPods(ctx context.Context, cluster rayv1.RayCluster, spec string) []built {
	fqdnRayIP := utils.GenerateFQDNServiceName(ctx, cluster, cluster.Namespace)
	headPort := common.GetHeadPort(cluster.Spec.HeadGroupSpec.RayStartParams)
	autoscaling := utils.IsAutoscalingEnabled(&cluster.Spec)
	creator := utils.GetCRDType(cluster.Labels[utils.RayOriginatedFromCRDLabelKey])
	headName := utils.PodName(cluster.Name, rayv1.HeadNode, !utils.IsDeterministicHeadPodNameEnabled())
	head := common.DefaultHeadPodTemplate(ctx, cluster, cluster.Spec.HeadGroupSpec, headName, headPort)
	out := []built{{"head", spec + ".headGroupSpec.template", common.BuildPod(ctx, head, rayv1.HeadNode,
		cluster.Spec.HeadGroupSpec.RayStartParams, headPort, autoscaling, creator, fqdnRayIP, nil, cluster.Spec.RayVersion),
		cluster.Spec.HeadGroupSpec.Template}}
	for i, group := range cluster.Spec.WorkerGroupSpecs {
		name := utils.PodName(fmt.Sprintf("%s-%s", cluster.Name, group.GroupName), rayv1.WorkerNode, true)
		worker := common.DefaultWorkerPodTemplate(ctx, cluster, group, name, fqdnRayIP, headPort, "", 0, 0)
		out = append(out, built{fmt.Sprintf("worker %s", group.GroupName), fmt.Sprintf("%s.workerGroupSpecs[%d].template", spec, i),
			common.BuildPod(ctx, worker, rayv1.WorkerNode, group.RayStartParams, headPort, autoscaling, creator, fqdnRayIP, nil, cluster.Spec.RayVersion),
			group.Template})
	}
	return out
}

// validate is the apiserver's create of a pod: defaulting, conversion to the internal type, then the
// pod REST strategy through rest.BeforeCreate (generateName as the store applies it, PrepareForCreate, Validate: ValidatePodCreate
// with the options it derives from the pod). The errors are the Invalid status's causes, with the field
// under the pod.
func validate(pod corev1.Pod) []metav1.StatusCause {
	pod = *pod.DeepCopy()
	corev1defaults.SetObjectDefaults_Pod(&pod)
	internal := &api.Pod{}
	if err := corev1defaults.Convert_v1_Pod_To_core_Pod(&pod, internal, nil); err != nil {
		return []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec", Message: err.Error()}}
	}
	ctx := genericapirequest.WithNamespace(context.Background(), internal.Namespace)
	rest.FillObjectMetaSystemFields(internal) // as the create handler does first, then the store the name
	if internal.GenerateName != "" && internal.Name == "" {
		internal.Name = podstore.Strategy.GenerateName(internal.GenerateName)
	}
	err := rest.BeforeCreate(podstore.Strategy, ctx, internal)
	if err == nil {
		return nil
	}
	if status, ok := err.(apierrors.APIStatus); ok && status.Status().Details != nil && len(status.Status().Details.Causes) > 0 {
		return status.Status().Details.Causes
	}
	return []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Message: err.Error()}}
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
	return fieldError{Field: path, Type: string(cause.Type), Detail: cause.Message, Message: path + ": " + cause.Message}
}
