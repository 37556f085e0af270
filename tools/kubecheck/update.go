package main

// Updates of built-in objects: what the pinned kube-apiserver's REST strategies validate when an object the cluster
// holds is changed (pkg/registry/<group>/<resource>: rest.BeforeUpdate runs PrepareForUpdate and ValidateUpdate):
// a PriorityClass's value, a Deployment's or Job's selector, a Job's template, a Service's clusterIP. The old
// object is stored as the create path stores it (defaults, generated fields such as a Job's selector); the new one
// is what kustomize-controller's server-side apply makes of it: the stored object with the fields the repository
// writes now over it and those it wrote before and no longer writes taken away (maps field by field, lists whole).

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
)

// builtinUpdateErrors is the apiserver's update validation of `obj` over `old` (both as the repository writes them):
// nil when it accepts it, when the kind is not one of `strategies`, or when either does not decode or the old one
// would not have been created (the create checks report those).
func builtinUpdateErrors(obj, old map[string]interface{}) (causes []metav1.StatusCause) {
	defer func() {
		if p := recover(); p != nil {
			causes = []metav1.StatusCause{{Type: "InternalError", Message: fmt.Sprintf("the apiserver's validation could not run on it: %v", p)}}
		}
	}()
	gvk := (&unstructured.Unstructured{Object: obj}).GroupVersionKind()
	strategy, ok := strategies[gvk.GroupKind()]
	update, updates := strategy.(rest.RESTUpdateStrategy)
	if !ok || !updates || !legacyscheme.Scheme.Recognizes(gvk) || (&unstructured.Unstructured{Object: old}).GroupVersionKind() != gvk {
		return nil
	}
	internal := func(m map[string]interface{}) runtime.Object {
		external, err := legacyscheme.Scheme.New(gvk)
		if err != nil || runtime.DefaultUnstructuredConverter.FromUnstructured(runtime.DeepCopyJSON(m), external) != nil {
			return nil
		}
		legacyscheme.Scheme.Default(external)
		out, err := legacyscheme.Scheme.ConvertToVersion(external, schema.GroupVersion{Group: gvk.Group, Version: runtime.APIVersionInternal})
		if err != nil {
			return nil
		}
		return out
	}
	ns, _, _ := unstructured.NestedString(obj, "metadata", "namespace")
	if ns == "" && strategy.NamespaceScoped() {
		ns = "default"
	}
	ctx := genericapirequest.WithNamespace(context.Background(), ns)
	oldObj := internal(old)
	if oldObj == nil || beforeCreate(strategy, ctx, oldObj) != nil {
		return nil
	}
	external, err := legacyscheme.Scheme.ConvertToVersion(oldObj, gvk.GroupVersion())
	if err != nil {
		return nil
	}
	storedOld, err := runtime.DefaultUnstructuredConverter.ToUnstructured(external)
	if err != nil {
		return nil
	}
	unstructured.SetNestedField(storedOld, "1", "metadata", "resourceVersion")
	newObj := internal(applied(storedOld, old, obj))
	if newObj == nil {
		return nil
	}
	serviceBegin(newObj, oldObj) // the storage's BeginUpdate hook (service.go)
	if err := rest.BeforeUpdate(update, ctx, newObj, oldObj); err != nil {
		return statusCauses(err)
	}
	return nil
}

// applied: `stored` with what `was` wrote and `now` no longer writes removed and what `now` writes set over it.
func applied(stored, was, now map[string]interface{}) map[string]interface{} {
	out := runtime.DeepCopyJSON(stored)
	var drop func(dst, was, now map[string]interface{})
	drop = func(dst, was, now map[string]interface{}) {
		for k, v := range was {
			n, kept := now[k]
			if !kept {
				delete(dst, k)
				continue
			}
			vm, vIsMap := v.(map[string]interface{})
			nm, nIsMap := n.(map[string]interface{})
			dm, dIsMap := dst[k].(map[string]interface{})
			if vIsMap && nIsMap && dIsMap {
				drop(dm, vm, nm)
			}
		}
	}
	var set func(dst, now map[string]interface{})
	set = func(dst, now map[string]interface{}) {
		for k, v := range now {
			vm, vIsMap := v.(map[string]interface{})
			dm, dIsMap := dst[k].(map[string]interface{})
			if vIsMap && dIsMap {
				set(dm, vm)
			} else {
				dst[k] = runtime.DeepCopyJSONValue(v)
			}
		}
	}
	drop(out, was, now)
	set(out, now)
	return out
}
