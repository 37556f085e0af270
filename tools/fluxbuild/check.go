// Checking: rendered objects validated offline the way the pinned kube-apiserver and Kueue's
// validating webhooks would on create, with their own code at the pinned versions:
//
//   - custom resources (every CRD of the pinned Kueue, KubeRay and Flux modules): the
//     apiextensions-apiserver decode path (unknown fields as fieldValidation=Strict reports them,
//     pruning, defaulting), then the custom-resource REST strategy through rest.BeforeCreate
//     (OpenAPI schema, embedded ObjectMeta, list-type invariants, x-kubernetes-validations CEL
//     rules, metadata), then Kueue's validating webhooks (ClusterQueue, ResourceFlavor, Cohort,
//     Workload, RayJob, RayCluster, RayService) on the defaulted object, as the apiserver calls them after its own checks,
//     then what KubeRay's RayJob controller validates before it acts (kuberay.go);
//   - built-in kinds: kubeconform's validator (strict) on the offline schemas of harness/gate/schemas.py,
//     then what the apiserver's validation checks of them beyond the schema with apimachinery's own
//     functions: metadata, and a ConfigMap's or Secret's data keys (builtinmeta.go).
//
// Like the apiserver, the first stage that rejects an object ends its checks (a strict-decoding
// error is reported without the validation errors that would follow).
//
// SCHEMA_DIR (a request's "schema_dir") holds the kubeconform schemas and crds/ (one JSON file per served
// version of a CRD, listed in crds/index.json); it is loaded once per process. A "prepare" request names the [apiVersion, kind] pairs
// the caller expects, whose validators are then built while it renders. A "check" answer has one
// result per object, in order: {"stage": "", "errors": [...]} where stage is "" (accepted),
// "unknown" (a kind the cluster would not serve), "decode", "schema", "validation", "webhook",
// "controller" (KubeRay, kuberay.go), "scheduler" (Kueue's scheduler, kueuesched.go) or "accounting" (pods KubeRay
// creates beyond what Kueue charges, accounting.go) or "idle-quota" (charged beyond what it creates).
package main

import (
	"context"
	"path/filepath"
	"sync"
)

type fieldError struct {
	Field   string `json:"field"`
	Type    string `json:"type"`
	Detail  string `json:"detail"`
	Message string `json:"message"`
}

type checkResult struct {
	Stage  string       `json:"stage"`
	Errors []fieldError `json:"errors"`
}

// schemaSet is one schema directory's CRDs and built-in validator, loaded in the background on
// first use.
type schemaSet struct {
	loaded    sync.WaitGroup
	crds      *crdSet
	builtin   *builtinValidator
	err       error
	preparing sync.Mutex // prepare builds validators one kind after another; the renderer needs the other core
}

var (
	setsMu sync.Mutex
	sets   = map[[2]string]*schemaSet{}
)

func schemas(schemaDir, k8sVersion string) *schemaSet {
	if schemaDir == "" || k8sVersion == "" {
		failRequest("a schema request needs schema_dir and kubernetes_version")
	}
	setsMu.Lock()
	defer setsMu.Unlock()
	key := [2]string{schemaDir, k8sVersion}
	if s, ok := sets[key]; ok {
		return s
	}
	s := &schemaSet{}
	s.loaded.Add(1)
	go func() {
		defer s.loaded.Done()
		var wg sync.WaitGroup
		var crdErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.crds, crdErr = loadCRDs(filepath.Join(schemaDir, "crds"))
		}()
		s.builtin, s.err = newBuiltinValidator(schemaDir, k8sVersion)
		wg.Wait()
		if s.err == nil {
			s.err = crdErr
		}
	}()
	sets[key] = s
	return s
}

func (s *schemaSet) ready() {
	s.loaded.Wait()
	if s.err != nil {
		failRequest("%v", s.err)
	}
}

// prepare returns at once; the validators of the expected kinds are built behind it.
func (s *schemaSet) prepare(kinds [][2]string) {
	go func() {
		s.loaded.Wait()
		if s.err == nil {
			s.preparing.Lock()
			defer s.preparing.Unlock()
			s.crds.prepare(kinds) // an error is reported when an object of the kind is checked
		}
	}()
}

func (s *schemaSet) check(objects []map[string]interface{}, related [][]map[string]interface{}, integrations map[string]bool) []checkResult {
	s.ready()
	ctx := context.WithValue(context.Background(), integrationsKey{}, integrations) // the manager's (managerIntegrations)
	results := make([]checkResult, len(objects))
	for i, obj := range objects {
		if crd := s.crds.lookup(obj); crd != nil {
			var others []map[string]interface{}
			if i < len(related) {
				others = related[i]
			}
			results[i] = crd.check(ctx, obj, others)
		} else if s.crds.knowsGroup(obj) {
			results[i] = checkResult{Stage: "unknown", Errors: []fieldError{{Field: "apiVersion", Type: "FieldValueNotSupported",
				Detail: s.crds.servedText(obj), Message: s.crds.servedText(obj)}}}
		} else {
			results[i] = s.builtin.check(obj)
		}
		if results[i].Errors == nil {
			results[i].Errors = []fieldError{}
		}
	}
	return results
}
