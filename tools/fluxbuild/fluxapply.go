// What kustomize-controller (v1.9.4, internal/controller/kustomization_controller.go) does with a Flux
// Kustomization beyond the build, with the fluxcd/pkg code it links (pkg/ssa at the version its go.mod
// requires): at apply, every object gets the owner labels (ResourceManager.SetOwnerLabels) and then
// spec.commonMetadata (ssautil.SetCommonMetadata).
package main

import (
	"github.com/fluxcd/pkg/ssa"
	ssautil "github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const fluxKustomizeGroup = "kustomize.toolkit.fluxcd.io" // kustomizev1.GroupVersion.Group

// asApplied gives the built objects what kustomize-controller's apply gives them: the owner labels, then
// spec.commonMetadata (which wins where both set a key).
func asApplied(objects []map[string]interface{}, ks *unstructured.Unstructured) {
	list := make([]*unstructured.Unstructured, len(objects))
	for i, o := range objects {
		list[i] = &unstructured.Unstructured{Object: o} // shares the map: the labels land in `objects`
	}
	namespace := ks.GetNamespace()
	if namespace == "" {
		namespace = "flux-system" // as the gate names a Kustomization written without one (harness/gate/render.py)
	}
	manager := ssa.NewResourceManager(nil, nil, ssa.Owner{Field: "kustomize-controller", Group: fluxKustomizeGroup})
	manager.SetOwnerLabels(list, ks.GetName(), namespace)
	labels, _, lerr := unstructured.NestedStringMap(ks.Object, "spec", "commonMetadata", "labels")
	annotations, _, aerr := unstructured.NestedStringMap(ks.Object, "spec", "commonMetadata", "annotations")
	if lerr == nil && aerr == nil { // (values that are no strings: the schema check reports them)
		ssautil.SetCommonMetadata(list, labels, annotations)
	}
}
