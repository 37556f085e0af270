// What kustomize-controller (v1.9.4, internal/controller/kustomization_controller.go) does with a Flux
// Kustomization beyond the build, with the fluxcd/pkg code it links (pkg/runtime/cel, pkg/ssa at the versions
// its go.mod requires):
//
//   - before anything, its spec.healthCheckExprs are compiled (cel.NewStatusReader): an expression that
//     does not parse leaves the Kustomization Stalled (InvalidCELExpression), and nothing of it is applied;
//   - during the build, with spec.decryption (provider sops), every object carrying SOPS metadata is
//     decrypted (decryptor.DecryptResource); offline the keys are not there, so its encrypted values become
//     placeholders of the type each ENC[...] marker names and the metadata goes, as decryption leaves it;
//   - at apply, every object gets the owner labels (ResourceManager.SetOwnerLabels) and then
//     spec.commonMetadata (ssautil.SetCommonMetadata), and a Secret still SOPS-encrypted fails the apply.
package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	kustomizeapi "github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/runtime/cel"
	"github.com/fluxcd/pkg/ssa"
	ssautil "github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/resource"
)

const (
	fluxKustomizeGroup = "kustomize.toolkit.fluxcd.io" // kustomizev1.GroupVersion.Group
	// the controller's TerminalErrorMessage, the prefix of its Stalled condition's message
	terminalErrorMessage = "Reconciliation failed terminally due to configuration error"
	sopsPlaceholder      = "sops-decrypted-offline"
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

// sopsDecrypts says whether the Kustomization's build decrypts SOPS-encrypted objects (spec.decryption.provider sops).
func sopsDecrypts(ks *unstructured.Unstructured) bool {
	provider, _, _ := unstructured.NestedString(ks.Object, "spec", "decryption", "provider")
	return provider == "sops"
}

func decryptionDisabled(annotations map[string]string) bool { // decryptor.IsDecryptionDisabled
	return strings.EqualFold(annotations[fluxKustomizeGroup+"/decrypt"], "disabled")
}

// decryptOffline replaces an encrypted resource (top-level `sops` with a `mac`, decryptor.isSOPSEncryptedResource)
// by what decryption would give, with placeholder values; false when it is not one decryption touches.
func decryptOffline(res *resource.Resource) (bool, error) {
	if decryptionDisabled(res.GetAnnotations()) {
		return false, nil
	}
	m, err := res.Map()
	if err != nil {
		return false, err
	}
	meta, ok := m["sops"].(map[string]interface{})
	if mac, _ := meta["mac"].(string); !ok || mac == "" {
		return false, nil
	}
	delete(m, "sops")
	secret := m["kind"] == "Secret"
	for key, value := range m {
		m[key] = placeholders(value, secret && (key == "data" || key == "binaryData"))
	}
	data, err := json.Marshal(m)
	if err != nil {
		return false, err
	}
	return true, res.UnmarshalJSON(data)
}

// SOPS's marker of an encrypted value; its type is the value's own once decrypted.
var encrypted = regexp.MustCompile(`^ENC\[AES256_GCM,data:.*,type:(str|int|float|bool|bytes|comment)\]$`)

func placeholders(value interface{}, base64Data bool) interface{} {
	switch v := value.(type) {
	case map[string]interface{}:
		for k, item := range v {
			v[k] = placeholders(item, base64Data)
		}
	case []interface{}:
		for i, item := range v {
			v[i] = placeholders(item, base64Data)
		}
	case string:
		marker := encrypted.FindStringSubmatch(v)
		if marker == nil {
			return v
		}
		switch marker[1] {
		case "int":
			return int64(0)
		case "float":
			return float64(0)
		case "bool":
			return false
		}
		if base64Data { // a Secret's data holds base64, and the decrypted value is that base64
			return base64.StdEncoding.EncodeToString([]byte(sopsPlaceholder))
		}
		return sopsPlaceholder
	}
	return value
}

// asApplied gives the built objects what kustomize-controller's apply gives them: the owner labels, then
// spec.commonMetadata (which wins where both set a key). It returns the apply's refusal of a Secret still
// SOPS-encrypted ("" when there is none).
func asApplied(objects []map[string]interface{}, ks *unstructured.Unstructured) string {
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
	for _, u := range list {
		if _, found := u.Object["sops"]; found && u.GetKind() == "Secret" && u.GetAPIVersion() == "v1" && !decryptionDisabled(u.GetAnnotations()) {
			return fmt.Sprintf("%s is SOPS encrypted, configuring decryption is required for this secret to be reconciled",
				ssautil.FmtUnstructured(u))
		}
	}
	return ""
}
