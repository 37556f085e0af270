package main

import (
	"context"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
)

// beforeCreate is what the apiserver does with a decoded, defaulted, internal object on create before
// it is stored: the handler fills the system fields, the store generates a name from generateName,
// a Service's storage fills its cluster IPs (service.go), then rest.BeforeCreate runs the strategy's PrepareForCreate and Validate. nil when it would be
// accepted, else the Invalid status's causes.
func beforeCreate(strategy rest.RESTCreateStrategy, ctx context.Context, obj runtime.Object) []metav1.StatusCause {
	m, err := meta.Accessor(obj)
	if err != nil {
		return []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Message: err.Error()}}
	}
	rest.FillObjectMetaSystemFields(m)
	if m.GetGenerateName() != "" && m.GetName() == "" {
		m.SetName(stable(strategy.GenerateName(m.GetGenerateName())))
	}
	serviceBegin(obj, nil) // the storage's BeginCreate hook (service.go)
	if err := rest.BeforeCreate(strategy, ctx, obj); err != nil {
		return statusCauses(err)
	}
	return nil
}

// statusCauses: an Invalid status's causes (the error's text alone when it has none).
func statusCauses(err error) []metav1.StatusCause {
	if status, ok := err.(apierrors.APIStatus); ok && status.Status().Details != nil && len(status.Status().Details.Causes) > 0 {
		return status.Status().Details.Causes
	}
	return []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Message: err.Error()}}
}

// causeError is a status cause as the caller's field error: "field: message" (the message alone without a field).
func causeError(cause metav1.StatusCause) fieldError {
	return fieldError{Field: cause.Field, Type: string(cause.Type), Detail: cause.Message,
		Message: strings.TrimPrefix(cause.Field+": "+cause.Message, ": ")}
}

// stable is a name the apiserver or KubeRay generated (a random suffix of 5 characters, apimachinery's rand.String)
// with the suffix spelled "xxxxx": as long as theirs, so that length limits hold alike, and the same on every run and
// cluster, so that a finding quoting it is the same finding each time.
func stable(generated string) string {
	if len(generated) < 5 {
		return generated
	}
	return generated[:len(generated)-5] + "xxxxx"
}
