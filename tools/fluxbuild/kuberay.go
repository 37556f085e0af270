package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kueue/pkg/controller/constants"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	"sigs.k8s.io/kueue/pkg/controller/jobs/rayjob"
)

// controllerErrors runs what the pinned KubeRay operator's controllers check before they do anything
// with a Ray object, with KubeRay's own functions: the RayJob controller's validateRayJob (metadata,
// spec), the RayCluster controller's metadata and spec validation (raycluster_controller.go), the
// RayService controller's (rayservice_controller.go). An object the apiserver and Kueue's webhook
// accept but these refuse gets an Invalid... event (a RayJob: jobDeploymentStatus ValidationFailed)
// and never runs. Other kinds: nil.
func controllerErrors(u *unstructured.Unstructured) []fieldError {
	var checks []func() error
	switch gvk := u.GroupVersionKind(); {
	case gvk.GroupVersion() != rayv1.GroupVersion:
		return nil
	case gvk.Kind == "RayJob":
		job, errs := rayJobOf(u)
		if job == nil {
			return errs
		}
		checks = []func() error{
			func() error { return atName(utils.ValidateRayJobMetadata(job.ObjectMeta)) },
			func() error {
				err := utils.ValidateRayJobSpec(job)
				queued := jobframework.QueueNameForObject(job) != ""
				switch {
				case err != nil && queued && len(job.Spec.ClusterSelector) > 0:
					return fmt.Errorf("%v (Kueue's mutating webhook suspends every RayJob with a queue-name label: a RayJob that runs "+
						"on an existing RayCluster cannot be queued; remove the label %s)", err, constants.QueueLabel)
				case err != nil && queued && strings.Contains(err.Error(), "deletionRules are mutually exclusive"):
					return fmt.Errorf("%v (and Kueue refuses a queued RayJob with shutdownAfterJobFinishes false: under Kueue, drop "+
						"deletionStrategy and keep shutdownAfterJobFinishes: true, with ttlSecondsAfterFinished for the cluster's lifetime)", err)
				}
				return err
			},
			func() error { return submissionModeError(job) },
		}
	case gvk.Kind == "RayCluster":
		cluster := &rayv1.RayCluster{}
		if errs := fromUnstructured(u, cluster); errs != nil {
			return errs
		}
		checks = []func() error{
			func() error { return atName(utils.ValidateRayClusterMetadata(cluster.ObjectMeta)) },
			func() error { return utils.ValidateRayClusterSpec(&cluster.Spec, cluster.Annotations) },
			func() error { return utils.ValidateRayClusterUpgradeOptions(cluster) },
		}
	case gvk.Kind == "RayService":
		service := &rayv1.RayService{}
		if errs := fromUnstructured(u, service); errs != nil {
			return errs
		}
		checks = []func() error{
			func() error { return atName(utils.ValidateRayServiceMetadata(service.ObjectMeta)) },
			func() error { return utils.ValidateRayServiceSpec(service) },
		}
	}
	for _, validate := range checks {
		if err := validate(); err != nil {
			var at fieldOf
			field := ""
			if errors.As(err, &at) {
				field = at.field
			}
			return []fieldError{{Field: field, Type: "Invalid", Detail: err.Error(), Message: err.Error()}}
		}
	}
	return nil
}

// fieldOf is a KubeRay error whose field its message does not name (the metadata checks judge only metadata.name).
type fieldOf struct {
	error
	field string
}

func atName(err error) error {
	if err == nil {
		return nil
	}
	return fieldOf{err, "metadata.name"}
}

// submissionModeError: a submissionMode that is none of KubeRay's modes passes its validation (the CRD has no enum), but
// the RayJob controller submits nothing for it (it creates a submitter Job only in K8sJobMode, posts over HTTP only in
// HTTPMode, ...): the job waits with its cluster up, and its quota held, forever.
func submissionModeError(job *rayv1.RayJob) error {
	switch job.Spec.SubmissionMode {
	case "", rayv1.K8sJobMode, rayv1.HTTPMode, rayv1.InteractiveMode, rayv1.SidecarMode:
		return nil
	}
	return fmt.Errorf("The RayJob spec is invalid: submissionMode %q is none of KubeRay's modes (%s, %s, %s, %s): its controller never "+
		"submits the job, which waits with its RayCluster up forever", job.Spec.SubmissionMode,
		rayv1.K8sJobMode, rayv1.HTTPMode, rayv1.InteractiveMode, rayv1.SidecarMode)
}

// kueueDefaults applies Kueue's mutating webhook for RayJobs (RayJobWebhook.Default: one without a queue-name label gets
// the label of its namespace's LocalQueue `default` when `related` holds one, by jobframework.ApplyDefaultLocalQueue; a
// job with a queue-name label is created suspended, by jobframework.ApplyDefaultForSuspend, whatever spec.suspend says)
// to `u`, as the apiserver calls it before its own validation. Other kinds are left alone.
func kueueDefaults(ctx context.Context, u *unstructured.Unstructured, related []map[string]interface{}) {
	job, _ := rayJobOf(u)
	if job == nil {
		return
	}
	// A RayJob without a queue-name label in a namespace with a LocalQueue named `default` is labelled for it
	// (LocalQueueDefaulting, locked on): Kueue manages it as any queued job.
	jobframework.ApplyDefaultLocalQueue(job, func(ns string) bool {
		for _, obj := range related {
			other := unstructured.Unstructured{Object: obj}
			if other.GetKind() == "LocalQueue" && other.GetName() == string(constants.DefaultLocalQueueName) && other.GetNamespace() == ns {
				return true
			}
		}
		return false
	})
	if queue := job.Labels[constants.QueueLabel]; queue != "" && u.GetLabels()[constants.QueueLabel] == "" {
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[constants.QueueLabel] = queue
		u.SetLabels(labels)
	}
	if err := jobframework.ApplyDefaultForSuspend(ctx, (*rayjob.RayJob)(job), emptyCluster(), false, nil); err != nil || !job.Spec.Suspend {
		return
	}
	_ = unstructured.SetNestedField(u.Object, true, "spec", "suspend")
}

// rayJobOf is the object as a RayJob; nil (with the decoding errors, if any) when it is another kind
// or does not decode.
func rayJobOf(u *unstructured.Unstructured) (*rayv1.RayJob, []fieldError) {
	gvk := u.GroupVersionKind()
	if gvk.GroupVersion() != rayv1.GroupVersion || gvk.Kind != "RayJob" {
		return nil, nil
	}
	job := &rayv1.RayJob{}
	if errs := fromUnstructured(u, job); errs != nil {
		return nil, errs
	}
	return job, nil
}
