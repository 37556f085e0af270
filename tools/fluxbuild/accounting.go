package main

import (
	"context"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
)

// accountingErrors compares, per worker group of a queued RayJob, RayCluster or RayService (its Kueue integration
// enabled), the pods Kueue charges to the ClusterQueue (the kind's own integration's PodSets, kueueJobPodSets:
// replicas times numOfHosts) with the pods KubeRay's RayCluster controller creates once the job is admitted
// (utils.GetWorkerGroupDesiredReplicas: replicas raised to minReplicas, lowered to maxReplicas, times numOfHosts).
// A worker group whose minReplicas is above its replicas (or whose replicas is left out: the CRD's default 0) runs
// pods Kueue never charged: they take nodes outside every quota. Kueue's webhook accepts it and KubeRay
// validates only minReplicas <= maxReplicas. `idle` are the groups charged for more pods than KubeRay creates
// (replicas above maxReplicas): quota held that no pod uses, while other jobs wait for it. A job with the in-tree
// autoscaler (Kueue's workload slices) changes its replicas at run time and is left out. Other kinds: nil.
func accountingErrors(ctx context.Context, u *unstructured.Unstructured) (errs, idle []fieldError) {
	spec, path, framework := rayClusterSpecOf(u)
	if spec == nil || jobframework.QueueNameForObject(u) == "" || !integrationEnabled(ctx, framework) ||
		ptr.Deref(spec.EnableInTreeAutoscaling, false) {
		return nil, nil
	}
	podSets, handled, err := kueueJobPodSets(ctx, u)
	if !handled || err != nil {
		return nil, nil // reported by schedulerErrors (a RayJob) or the admission check (sample-fits)
	}
	for i, group := range spec.WorkerGroupSpecs {
		if i+1 >= len(podSets) {
			break
		}
		charged, created := podSets[i+1].Count, utils.GetWorkerGroupDesiredReplicas(group)
		said := func(why, outcome string, pods int32) fieldError {
			msg := fmt.Sprintf("worker group %q: Kueue charges the queue for %d pod(s) (replicas %d), KubeRay creates %d (%s): %d pod(s) %s",
				group.GroupName, charged, ptr.Deref(group.Replicas, 0), created, why, pods, outcome)
			return fieldError{Field: fmt.Sprintf("%s.workerGroupSpecs[%d].replicas", path, i), Type: "FieldValueInvalid",
				Detail: msg, Message: msg}
		}
		switch {
		case created > charged:
			errs = append(errs, said(fmt.Sprintf("replicas raised to minReplicas %d", ptr.Deref(group.MinReplicas, 0)),
				"run outside the ClusterQueue's quota", created-charged))
		case created < charged && ptr.Deref(group.Suspend, false):
			idle = append(idle, said("the group is suspended", "of quota stay reserved and unused while the job runs", charged-created))
		case created < charged:
			idle = append(idle, said(fmt.Sprintf("replicas lowered to maxReplicas %d", ptr.Deref(group.MaxReplicas, 0)),
				"of quota stay reserved and unused while the job runs", charged-created))
		}
	}
	return errs, idle
}

// rayClusterSpecOf: the cluster spec of a RayJob (spec.rayClusterSpec), RayCluster (spec) or RayService
// (spec.rayClusterConfig), the path it is written at and the Kueue integration of the kind; nil for another kind, an
// object that does not decode (the check reports why) or a RayJob on an existing cluster (clusterSelector).
func rayClusterSpecOf(u *unstructured.Unstructured) (spec *rayv1.RayClusterSpec, path, framework string) {
	if u.GroupVersionKind().GroupVersion() != rayv1.GroupVersion {
		return nil, "", ""
	}
	switch u.GetKind() {
	case "RayJob":
		if job, _ := rayJobOf(u); job != nil {
			return job.Spec.RayClusterSpec, "spec.rayClusterSpec", "ray.io/rayjob"
		}
	case "RayCluster":
		cluster := &rayv1.RayCluster{}
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cluster) == nil {
			return &cluster.Spec, "spec", "ray.io/raycluster"
		}
	case "RayService":
		service := &rayv1.RayService{}
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, service) == nil {
			return &service.Spec.RayClusterSpec, "spec.rayClusterConfig", "ray.io/rayservice"
		}
	}
	return nil, "", ""
}
