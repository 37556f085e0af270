package main

import (
	"context"
	"fmt"

	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	"sigs.k8s.io/kueue/pkg/controller/jobs/rayjob"
)

// accountingErrors compares, per worker group of a queued RayJob, the pods Kueue charges to the ClusterQueue
// (the Ray integration's PodSets: replicas times numOfHosts) with the pods KubeRay's RayCluster controller
// creates once the job is admitted (utils.GetWorkerGroupDesiredReplicas: replicas raised to minReplicas,
// lowered to maxReplicas, times numOfHosts). A worker group whose minReplicas is above its replicas runs
// pods Kueue never charged: they take nodes outside every quota. Kueue's webhook accepts it and KubeRay
// validates only minReplicas <= maxReplicas. `idle` are the groups charged for more pods than KubeRay creates
// (replicas above maxReplicas): quota held that no pod uses, while other jobs wait for it. A job with the in-tree
// autoscaler (Kueue's workload slices) changes its replicas at run time and is left out. Other kinds: nil.
func accountingErrors(ctx context.Context, u *unstructured.Unstructured) (errs, idle []fieldError) {
	job, _ := rayJobOf(u)
	if job == nil || job.Spec.RayClusterSpec == nil || jobframework.QueueNameForObject(job) == "" ||
		ptr.Deref(job.Spec.RayClusterSpec.EnableInTreeAutoscaling, false) {
		return nil, nil
	}
	podSets, err := (*rayjob.RayJob)(job).PodSets(ctx)
	if err != nil {
		return nil, nil // reported by schedulerErrors
	}
	for i, group := range job.Spec.RayClusterSpec.WorkerGroupSpecs {
		if i+1 >= len(podSets) {
			break
		}
		charged, created := podSets[i+1].Count, utils.GetWorkerGroupDesiredReplicas(group)
		said := func(why, outcome string, pods int32) fieldError {
			msg := fmt.Sprintf("worker group %q: Kueue charges the queue for %d pod(s) (replicas %d), KubeRay creates %d (%s): %d pod(s) %s",
				group.GroupName, charged, ptr.Deref(group.Replicas, 0), created, why, pods, outcome)
			return fieldError{Field: fmt.Sprintf("spec.rayClusterSpec.workerGroupSpecs[%d].replicas", i), Type: "FieldValueInvalid",
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
