package main

import (
	"context"
	"errors"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/controller/jobs/rayjob"
	"sigs.k8s.io/kueue/pkg/webhooks"
)

// webhookErrors runs Kueue's validating webhook for the object's kind, as registered by Kueue
// (v1beta2 for its own kinds, ray.io/v1 RayJob for the Ray integration), with Kueue's default
// feature gates. Kinds Kueue has no validating webhook for return nil.
func webhookErrors(ctx context.Context, u *unstructured.Unstructured) []fieldError {
	u, err := toStored(u) // a v1beta1 object reaches Kueue's webhook as v1beta2
	if err != nil {
		return []fieldError{{Type: "InternalError", Detail: err.Error(), Message: err.Error()}}
	}
	gvk := u.GroupVersionKind()
	switch {
	case gvk.GroupVersion() == kueue.GroupVersion:
		switch gvk.Kind {
		case "ClusterQueue":
			cq := &kueue.ClusterQueue{}
			if err := fromUnstructured(u, cq); err != nil {
				return err
			}
			return fieldErrors(webhooks.ValidateClusterQueue(cq))
		case "ResourceFlavor":
			rf := &kueue.ResourceFlavor{}
			if err := fromUnstructured(u, rf); err != nil {
				return err
			}
			return fieldErrors(webhooks.ValidateResourceFlavor(rf))
		case "Workload":
			wl := &kueue.Workload{}
			if err := fromUnstructured(u, wl); err != nil {
				return err
			}
			return fieldErrors(webhooks.ValidateWorkload(wl))
		case "Cohort":
			cohort := &kueue.Cohort{}
			if err := fromUnstructured(u, cohort); err != nil {
				return err
			}
			_, err := (&webhooks.CohortWebhook{}).ValidateCreate(ctx, cohort)
			return aggregateErrors(err)
		}
	case gvk.GroupVersion() == rayv1.GroupVersion && gvk.Kind == "RayJob":
		job := &rayv1.RayJob{}
		if err := fromUnstructured(u, job); err != nil {
			return err
		}
		_, err := (&rayjob.RayJobWebhook{}).ValidateCreate(ctx, job)
		return aggregateErrors(err)
	}
	return nil
}

func fromUnstructured(u *unstructured.Unstructured, into interface{}) []fieldError {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		return []fieldError{{Type: "InternalError", Detail: err.Error(), Message: err.Error()}}
	}
	return nil
}

// aggregateErrors turns a webhook's error (an aggregate of field errors) back into field errors.
func aggregateErrors(err error) []fieldError {
	if err == nil {
		return nil
	}
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		var list field.ErrorList
		rest := []fieldError{}
		for _, e := range agg.Errors() {
			var fe *field.Error
			if errors.As(e, &fe) {
				list = append(list, fe)
			} else {
				rest = append(rest, fieldError{Type: "Forbidden", Detail: e.Error(), Message: e.Error()})
			}
		}
		return append(fieldErrors(list), rest...)
	}
	return []fieldError{{Type: "Forbidden", Detail: err.Error(), Message: err.Error()}}
}
