package main

// The objects other than pods KubeRay's controllers create for a RayJob, RayCluster or RayService once Kueue admits it,
// made by KubeRay's own builders, for the ResourceQuota admission of their namespace (quota.go): a RayJob's or
// RayService's RayCluster, the cluster's head Service (raycluster_controller.go reconcileHeadService, before any pod:
// refused, no pod is ever created), its headless Service of multi-host worker groups (reconcileHeadlessService), its
// serve Service (reconcileServeService, ray.io/enable-serve-service), a RayService's own head and serve Services
// (reconcileServicesToReadyCluster), and a RayJob's submitter Job (submitter.go).

import (
	"context"
	"fmt"
	"maps"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/common"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	corev1defaults "k8s.io/kubernetes/pkg/apis/core/v1"
)

// createdObjects: what KubeRay creates for `obj` besides the pods (`submitter`: the RayJob's submitter Job, if any);
// nil for another object. They are named by their kind and role, not their names, so that one quota refusing the same
// objects of several jobs is one finding (schema_check._one_per_quota_cause).
func createdObjects(obj map[string]interface{}, submitter *batchv1.Job) []charged {
	m, ok := madeOf(obj)
	if !ok {
		return nil
	}
	ctx := context.Background()
	cluster, head := m.cluster, m.cluster.Spec.HeadGroupSpec
	typeField := "" // where the user wrote the type of the Services KubeRay makes for the head
	switch {
	case head.HeadService != nil:
		typeField = m.spec + ".headGroupSpec.headService"
	case head.ServiceType != "":
		typeField = m.spec + ".headGroupSpec.serviceType"
	}
	var out []charged
	service := func(svc *corev1.Service, err error, what, field string) {
		if err != nil || svc == nil {
			return // KubeRay's controller reports it (no Service is created)
		}
		corev1defaults.SetObjectDefaults_Service(svc)
		out = append(out, charged{svc, corev1.Resource("services"), 1, fmt.Sprintf("%s, type %s", what, svc.Spec.Type), field})
	}
	if m.job != nil || m.service != nil {
		out = append(out, charged{&cluster, rayv1.GroupVersion.WithResource("rayclusters").GroupResource(), 1,
			"the RayCluster", ""})
	}
	labels := map[string]string{}
	if v, ok := head.Template.Labels[utils.KubernetesApplicationNameLabelKey]; ok {
		labels[utils.KubernetesApplicationNameLabelKey] = v
	}
	svc, err := common.BuildServiceForHeadPod(ctx, cluster, labels, maps.Clone(cluster.Spec.HeadServiceAnnotations))
	service(svc, err, "the head Service", typeField)
	for i, group := range cluster.Spec.WorkerGroupSpecs {
		if group.NumOfHosts > 1 {
			service(common.BuildHeadlessServiceForRayCluster(cluster), nil, "the headless Service of multi-host workers",
				fmt.Sprintf("%s.workerGroupSpecs[%d].numOfHosts", m.spec, i))
			break
		}
	}
	if cluster.Annotations[utils.EnableServeServiceKey] == utils.EnableServeServiceTrue {
		svc, err := common.BuildServeServiceForRayCluster(ctx, cluster)
		service(svc, err, "the serve Service", typeField)
	}
	if m.service != nil {
		svc, err := common.BuildHeadServiceForRayService(ctx, *m.service, cluster)
		service(svc, err, "the RayService's head Service", typeField)
		serveField := typeField
		if m.service.Spec.ServeService != nil {
			serveField = "spec.serveService"
		}
		svc, err = common.BuildServeServiceForRayService(ctx, *m.service, cluster)
		service(svc, err, "the RayService's serve Service", serveField)
	}
	if submitter != nil {
		field := ""
		if m.job.Spec.SubmissionMode != "" {
			field = "spec.submissionMode"
		}
		out = append(out, charged{submitter, batchv1.SchemeGroupVersion.WithResource("jobs").GroupResource(), 1, "the submitter Job", field})
	}
	return out
}
