package main

import (
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// builtinNames is the name check the pinned kube-apiserver makes per built-in kind (k8s.io/kubernetes
// v1.35 pkg/apis/*/validation, which assign these apimachinery functions: ValidateNamespaceName,
// ValidateServiceName, rbac's ValidateRBACName); every other kind it names as a DNS subdomain.
// Those packages cannot be linked here (they register Kubernetes' feature gates, which Kueue's
// registration collides with), so their apimachinery functions are called directly.
var builtinNames = map[string]apivalidation.ValidateNameFunc{
	"Namespace":          apivalidation.ValidateNamespaceName,
	"Service":            apivalidation.NameIsDNS1035Label,
	"Role":               rbacName,
	"ClusterRole":        rbacName,
	"RoleBinding":        rbacName,
	"ClusterRoleBinding": rbacName,
}

func rbacName(name string, _ bool) []string { return path.IsValidPathSegmentName(name) }

// builtinMetadataErrors is what the apiserver's validation of a built-in kind refuses that its
// OpenAPI schema lets through: the object's metadata (apimachinery's ValidateObjectMeta: the name,
// label keys and values, annotation keys and their total size, finalizers) and, for a ConfigMap or
// Secret, its data keys (IsConfigMapKey, as ValidateConfigMap and ValidateSecret check them).
func builtinMetadataErrors(obj map[string]interface{}) []fieldError {
	raw, _ := obj["metadata"].(map[string]interface{})
	meta := metav1.ObjectMeta{}
	if raw == nil || runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &meta) != nil {
		return nil // the schema check reports a metadata that does not decode
	}
	kind, _ := obj["kind"].(string)
	nameFn, ok := builtinNames[kind]
	if !ok {
		nameFn = apivalidation.NameIsDNSSubdomain
	}
	// A namespace left out is filled in on apply, so it is checked only where written.
	errs := apivalidation.ValidateObjectMeta(&meta, meta.Namespace != "", nameFn, field.NewPath("metadata"))
	for _, e := range errs {
		if bad, ok := e.BadValue.(string); ok {
			e.Field = entryField(e.Field, meta.Labels, meta.Annotations, func(k, v string) bool { return k == bad || v == bad })
		}
	}
	if kind == "ConfigMap" || kind == "Secret" {
		for _, bag := range []string{"data", "binaryData", "stringData"} {
			entries, _ := obj[bag].(map[string]interface{})
			for key := range entries {
				for _, msg := range validation.IsConfigMapKey(key) {
					errs = append(errs, field.Invalid(field.NewPath(bag).Key(key), key, msg))
				}
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fieldErrors(errs)
}

// entryField names the label or annotation an error about the whole map is about (`is` tells it
// by its key or value), so that the finding points at that entry's line; other fields unchanged.
func entryField(at string, labels, annotations map[string]string, is func(k, v string) bool) string {
	entries := map[string]map[string]string{"metadata.labels": labels, "metadata.annotations": annotations}[at]
	for k, v := range entries {
		if is(k, v) {
			return at + "[" + k + "]"
		}
	}
	return at
}
