package main

import (
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// controllerErrors runs what the pinned KubeRay operator's RayJob controller checks before it
// does anything with a RayJob (validateRayJob in rayjob_controller.go: the metadata, then the
// spec), with KubeRay's own functions. An object the apiserver and Kueue's webhook accept but
// these refuse is marked ValidationFailed by the operator and never runs. Other kinds: nil.
func controllerErrors(u *unstructured.Unstructured) []fieldError {
	job, errs := rayJobOf(u)
	if job == nil {
		return errs
	}
	for _, validate := range []func() error{
		func() error { return utils.ValidateRayJobMetadata(job.ObjectMeta) },
		func() error { return utils.ValidateRayJobSpec(job) },
	} {
		if err := validate(); err != nil {
			return []fieldError{{Type: "Invalid", Detail: err.Error(), Message: err.Error()}}
		}
	}
	return nil
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
