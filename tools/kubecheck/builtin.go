package main

// Built-in objects: what the pinned kube-apiserver's REST strategies validate on create, with their own
// code (pkg/registry/<group>/<resource>: rest.BeforeCreate runs PrepareForCreate and Validate), after
// the apiserver's decoding: the object as its served version, defaulted, converted to the internal
// type. The OpenAPI schema (tools/fluxbuild: kubeconform) lets through what these refuse: a LimitRange
// whose min exceeds its max, a user PriorityClass above 1e9, a ConfigMap key in both data and
// binaryData, a negative ResourceQuota, a DaemonSet whose selector misses its template's labels. A
// refused object makes its Flux Kustomization fail, so nothing of that layer is applied.

import (
	"context"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	_ "k8s.io/kubernetes/pkg/apis/batch/install"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	_ "k8s.io/kubernetes/pkg/apis/networking/install"
	_ "k8s.io/kubernetes/pkg/apis/policy/install"
	_ "k8s.io/kubernetes/pkg/apis/rbac/install"
	_ "k8s.io/kubernetes/pkg/apis/scheduling/install"
	"k8s.io/kubernetes/pkg/registry/apps/daemonset"
	"k8s.io/kubernetes/pkg/registry/apps/deployment"
	"k8s.io/kubernetes/pkg/registry/apps/statefulset"
	"k8s.io/kubernetes/pkg/registry/batch/cronjob"
	"k8s.io/kubernetes/pkg/registry/batch/job"
	"k8s.io/kubernetes/pkg/registry/core/configmap"
	"k8s.io/kubernetes/pkg/registry/core/limitrange"
	"k8s.io/kubernetes/pkg/registry/core/namespace"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolumeclaim"
	podstore "k8s.io/kubernetes/pkg/registry/core/pod"
	"k8s.io/kubernetes/pkg/registry/core/resourcequota"
	"k8s.io/kubernetes/pkg/registry/core/secret"
	"k8s.io/kubernetes/pkg/registry/core/service"
	"k8s.io/kubernetes/pkg/registry/core/serviceaccount"
	"k8s.io/kubernetes/pkg/registry/networking/networkpolicy"
	"k8s.io/kubernetes/pkg/registry/policy/poddisruptionbudget"
	"k8s.io/kubernetes/pkg/registry/rbac/clusterrole"
	"k8s.io/kubernetes/pkg/registry/rbac/clusterrolebinding"
	"k8s.io/kubernetes/pkg/registry/rbac/role"
	"k8s.io/kubernetes/pkg/registry/rbac/rolebinding"
	"k8s.io/kubernetes/pkg/registry/scheduling/priorityclass"
)

// strategies: the built-in kinds a GitOps repository applies, each with the apiserver's create strategy.
var strategies = map[schema.GroupKind]rest.RESTCreateStrategy{
	{Kind: "Namespace"}:                                              namespace.Strategy,
	{Kind: "ConfigMap"}:                                              configmap.Strategy,
	{Kind: "Secret"}:                                                 secret.Strategy,
	{Kind: "ServiceAccount"}:                                         serviceaccount.Strategy,
	{Kind: "LimitRange"}:                                             limitrange.Strategy,
	{Kind: "ResourceQuota"}:                                          resourcequota.Strategy,
	{Kind: "Service"}:                                                service.Strategy,
	{Kind: "Pod"}:                                                    podstore.Strategy,
	{Kind: "PersistentVolumeClaim"}:                                  persistentvolumeclaim.Strategy,
	{Group: "apps", Kind: "Deployment"}:                              deployment.Strategy,
	{Group: "apps", Kind: "DaemonSet"}:                               daemonset.Strategy,
	{Group: "apps", Kind: "StatefulSet"}:                             statefulset.Strategy,
	{Group: "batch", Kind: "Job"}:                                    job.Strategy,
	{Group: "batch", Kind: "CronJob"}:                                cronjob.Strategy,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:              priorityclass.Strategy,
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"}:              networkpolicy.Strategy,
	{Group: "policy", Kind: "PodDisruptionBudget"}:                   poddisruptionbudget.Strategy,
	{Group: "rbac.authorization.k8s.io", Kind: "Role"}:               role.Strategy,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:        clusterrole.Strategy,
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}:        rolebinding.Strategy,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}: clusterrolebinding.Strategy,
}

// builtinErrors is the apiserver's create validation of a built-in object: nil when it accepts it, or
// when its kind is not one of `strategies`. An object that does not decode into its type is refused as the
// apiserver refuses it (400: "cannot be handled as"): the schema check reports a wrong type first, but the
// OpenAPI schema has no pattern for a quantity ("2 cores") or an int-or-string, which only decoding refuses.
func builtinErrors(obj map[string]interface{}) (causes []metav1.StatusCause) {
	defer func() {
		if p := recover(); p != nil { // a finding on the object, not the end of the gate's run
			causes = []metav1.StatusCause{{Type: "InternalError", Message: fmt.Sprintf("the apiserver's validation could not run on it: %v", p)}}
		}
	}()
	u := &unstructured.Unstructured{Object: obj}
	gvk := u.GroupVersionKind()
	strategy, ok := strategies[gvk.GroupKind()]
	if !ok || !legacyscheme.Scheme.Recognizes(gvk) {
		return nil
	}
	external, err := legacyscheme.Scheme.New(gvk)
	if err != nil {
		return nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, external); err != nil {
		return decodeCauses(obj, gvk, err)
	}
	legacyscheme.Scheme.Default(external)
	internal, err := legacyscheme.Scheme.ConvertToVersion(external, schema.GroupVersion{Group: gvk.Group, Version: runtime.APIVersionInternal})
	if err != nil {
		return []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Message: fmt.Sprintf("converting %s: %v", gvk.Kind, err)}}
	}
	ns := u.GetNamespace()
	if ns == "" && strategy.NamespaceScoped() {
		ns = "default" // what kubectl and Flux send when the object names none
	}
	return beforeCreate(strategy, genericapirequest.WithNamespace(context.Background(), ns), internal)
}

// decodeCauses is the apiserver's refusal of an object its decoder cannot read (its message names no field), at
// the value that fails: the first leaf (in key order) that, emptied, lets the object decode.
func decodeCauses(obj map[string]interface{}, gvk schema.GroupVersionKind, decodeErr error) []metav1.StatusCause {
	message := fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, gvk.Kind, decodeErr)
	copied := runtime.DeepCopyJSON(obj)
	decodes := func() bool {
		external, err := legacyscheme.Scheme.New(gvk)
		return err == nil && runtime.DefaultUnstructuredConverter.FromUnstructured(copied, external) == nil
	}
	var found *metav1.StatusCause
	var walk func(node interface{}, path string, set func(interface{}))
	walk = func(node interface{}, path string, set func(interface{})) {
		if found != nil {
			return
		}
		switch v := node.(type) {
		case map[string]interface{}:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				step := "." + k
				if strings.ContainsAny(k, "./") {
					step = "[" + k + "]"
				}
				walk(v[k], strings.TrimPrefix(path+step, "."), func(x interface{}) { v[k] = x })
			}
		case []interface{}:
			for i, item := range v {
				walk(item, fmt.Sprintf("%s[%d]", path, i), func(x interface{}) { v[i] = x })
			}
		default:
			if set == nil || path == "apiVersion" || path == "kind" {
				return
			}
			set(nil)
			ok := decodes()
			set(node)
			if ok {
				found = &metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Field: path, Message: message}
			}
		}
	}
	walk(copied, "", nil)
	if found != nil {
		return []metav1.StatusCause{*found}
	}
	return []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Message: message}}
}

// storedForm is a built-in object as the apiserver stores it: with the defaults of its served version (a LimitRange's
// Container limits get default = max and defaultRequest = default, which Kueue reads when it sizes a Workload); the
// object itself when it is no kind of `strategies` or does not decode (its checks report that).
func storedForm(obj map[string]interface{}) map[string]interface{} {
	u := &unstructured.Unstructured{Object: obj}
	gvk := u.GroupVersionKind()
	if _, ok := strategies[gvk.GroupKind()]; !ok || !legacyscheme.Scheme.Recognizes(gvk) {
		return obj
	}
	typed, err := legacyscheme.Scheme.New(gvk)
	if err != nil || runtime.DefaultUnstructuredConverter.FromUnstructured(runtime.DeepCopyJSON(obj), typed) != nil {
		return obj
	}
	legacyscheme.Scheme.Default(typed)
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return obj
	}
	return out
}
