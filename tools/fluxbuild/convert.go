package main

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kueuev1beta1 "sigs.k8s.io/kueue/apis/kueue/v1beta1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// kueueVersions holds Kueue's served versions and the conversions Kueue registers between them
// (its conversion webhook's code: v1beta1 -> v1beta2, e.g. cohort -> cohortName, admissionChecks ->
// admissionChecksStrategy).
var kueueVersions = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(kueuev1beta1.AddToScheme(s))
	utilruntime.Must(kueue.AddToScheme(s))
	return s
}()

// converted is one object of a `convert` request: the object as Kueue stores it, or why it could
// not be converted (the checks report that object's problems).
type converted struct {
	Object map[string]interface{} `json:"object,omitempty"`
	Error  string                 `json:"error,omitempty"`
}

// toStored converts a kueue.x-k8s.io/v1beta1 object to v1beta2, as the apiserver does before it
// stores the object and before Kueue's validating webhook (registered for v1beta2) sees it. Other
// objects come back unchanged.
func toStored(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	gvk := u.GroupVersionKind()
	if gvk.GroupVersion() != kueuev1beta1.GroupVersion {
		return u, nil
	}
	in, err := kueueVersions.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, in); err != nil {
		return nil, err
	}
	out, err := kueueVersions.New(kueue.GroupVersion.WithKind(gvk.Kind))
	if err != nil {
		return nil, err
	}
	if err := kueueVersions.Convert(in, out, nil); err != nil {
		return nil, err
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(out)
	if err != nil {
		return nil, err
	}
	stored := &unstructured.Unstructured{Object: obj}
	stored.SetGroupVersionKind(kueue.GroupVersion.WithKind(gvk.Kind))
	return stored, nil
}

func convertObjects(objects []map[string]interface{}) []converted {
	out := make([]converted, len(objects))
	for i, o := range objects {
		stored, err := toStored(&unstructured.Unstructured{Object: o})
		if err != nil {
			out[i].Error = err.Error()
			continue
		}
		if _, had := o["status"]; !had {
			delete(stored.Object, "status") // the typed object's zero status: not the user's
		}
		out[i].Object = stored.Object
	}
	return out
}
