// Command kubecheck validates rendered objects offline the way the pinned kube-apiserver and
// Kueue's validating webhooks would on create, with their own code at the pinned versions:
//
//   - custom resources (every CRD of the pinned Kueue, KubeRay and Flux modules): the
//     apiextensions-apiserver decode path (unknown fields as fieldValidation=Strict reports them,
//     pruning, defaulting), then the custom-resource REST strategy through rest.BeforeCreate
//     (OpenAPI schema, embedded ObjectMeta, list-type invariants, x-kubernetes-validations CEL
//     rules, metadata), then Kueue's validating webhooks (ClusterQueue, ResourceFlavor, Cohort,
//     Workload, RayJob) on the defaulted object, as the apiserver calls them after its own checks;
//   - built-in kinds: kubeconform's validator (strict) on the offline schemas of harness/gate/schemas.py.
//
// Like the apiserver, the first stage that rejects an object ends its checks (a strict-decoding
// error is reported without the validation errors that would follow).
//
// `kubecheck match` answers placement and label-selector questions instead (match.go).
//
// Usage: kubecheck SCHEMA_DIR KUBERNETES_VERSION < objects.json > results.json
// SCHEMA_DIR holds the kubeconform schemas and crds.json (the CRDs, as a JSON list). stdin: one
// line with the [apiVersion, kind] pairs the caller expects, whose validators are built while the
// caller is still rendering, then a JSON list of the objects. Output: one result
// per input object, in order: {"stage": "", "errors": [...]} where stage is "" (accepted),
// "unknown" (a kind the cluster would not serve), "decode", "schema", "validation", "webhook" or
// "controller" (KubeRay's RayJob controller refuses it: kuberay.go).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
)

type fieldError struct {
	Field   string `json:"field"`
	Type    string `json:"type"`
	Detail  string `json:"detail"`
	Message string `json:"message"`
}

type result struct {
	Stage  string       `json:"stage"`
	Errors []fieldError `json:"errors"`
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "kubecheck: "+format+"\n", args...)
	os.Exit(2)
}

func main() {
	// A short-lived helper of one gate run: collect garbage less often (unless GOGC says otherwise);
	// at Go's default the collector takes about a fifth of its CPU time on 2 cores.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if len(os.Args) == 2 && os.Args[1] == "match" {
		serveMatch(os.Stdin, os.Stdout)
		return
	}
	if len(os.Args) != 3 {
		fail("usage: kubecheck SCHEMA_DIR KUBERNETES_VERSION < objects.json | kubecheck match (see match.go)")
	}
	schemaDir, k8sVersion := os.Args[1], os.Args[2]
	var (
		crds    *crdSet
		crdErr  error
		loading sync.WaitGroup
	)
	loading.Add(1)
	go func() {
		defer loading.Done()
		crds, crdErr = loadCRDs(filepath.Join(schemaDir, "crds.json"))
	}()
	builtin, err := newBuiltinValidator(schemaDir, k8sVersion)
	if err != nil {
		fail("%v", err)
	}
	in := bufio.NewReader(os.Stdin)
	// First line: the apiVersion/kind pairs the caller expects (from its sources), built while it
	// renders; then the objects.
	hintLine, err := in.ReadBytes('\n')
	if err != nil {
		fail("reading the kinds line: %v", err)
	}
	var hints [][2]string
	if err := json.Unmarshal(hintLine, &hints); err != nil {
		fail("reading the kinds line: %v", err)
	}
	var preparing sync.WaitGroup
	preparing.Add(1)
	go func() {
		defer preparing.Done()
		loading.Wait()
		if crdErr == nil {
			crds.prepare(hints)
		}
	}()
	data, err := io.ReadAll(in)
	if err != nil {
		fail("reading objects: %v", err)
	}
	var objects []map[string]interface{}
	if err := json.Unmarshal(data, &objects); err != nil {
		fail("reading objects: %v", err)
	}
	loading.Wait()
	if crdErr != nil {
		fail("%v", crdErr)
	}
	preparing.Wait()
	ctx := context.Background()
	results := make([]result, len(objects))
	for i, obj := range objects {
		if crd := crds.lookup(obj); crd != nil {
			results[i] = crd.check(ctx, obj)
		} else if crds.knowsGroup(obj) {
			results[i] = result{Stage: "unknown", Errors: []fieldError{{Field: "apiVersion", Type: "FieldValueNotSupported",
				Detail: crds.servedText(obj), Message: crds.servedText(obj)}}}
		} else {
			results[i] = builtin.check(obj)
		}
		if results[i].Errors == nil {
			results[i].Errors = []fieldError{}
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(results); err != nil {
		fail("%v", err)
	}
}
