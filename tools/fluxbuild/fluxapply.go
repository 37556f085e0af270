// What kustomize-controller (v1.9.4, internal/controller/kustomization_controller.go) does with a Flux
// Kustomization beyond the build, with the fluxcd/pkg code it links (pkg/runtime/cel, pkg/ssa at the versions
// its go.mod requires):
//
//   - before anything, its spec.healthCheckExprs are compiled (cel.NewStatusReader): an expression that
//     does not parse leaves the Kustomization Stalled (InvalidCELExpression), and nothing of it is applied;
//   - at apply, every object gets the owner labels (ResourceManager.SetOwnerLabels) and then
//     spec.commonMetadata (ssautil.SetCommonMetadata).
package main

import (
	"fmt"

	kustomizeapi "github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/runtime/cel"
	"github.com/fluxcd/pkg/ssa"
	ssautil "github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

const (
	fluxKustomizeGroup = "kustomize.toolkit.fluxcd.io" // kustomizev1.GroupVersion.Group
	// the controller's TerminalErrorMessage, the prefix of its Stalled condition's message
	terminalErrorMessage = "Reconciliation failed terminally due to configuration error"
)

// healthCheckError is the controller's refusal of the Kustomization's spec.healthCheckExprs ("" when it takes them).
func healthCheckError(ks *unstructured.Unstructured) string {
	raw, found, _ := unstructured.NestedFieldNoCopy(ks.Object, "spec", "healthCheckExprs")
	if !found || raw == nil {
		return ""
	}
	var checks []kustomizeapi.CustomHealthCheck
	list, ok := raw.([]interface{})
	if !ok {
		return "" // not a list: the schema check reports it
	}
	for _, item := range list {
		var hc kustomizeapi.CustomHealthCheck
		m, ok := item.(map[string]interface{})
		if !ok || runtime.DefaultUnstructuredConverter.FromUnstructured(m, &hc) != nil {
			return "" // the schema check reports an entry that does not decode
		}
		checks = append(checks, hc)
	}
	if _, err := cel.NewStatusReader(checks); err != nil {
		return fmt.Sprintf("InvalidCELExpression, the Kustomization is Stalled: %s: %v", terminalErrorMessage, err)
	}
	return ""
}

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
