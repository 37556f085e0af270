// Command kubecheck is the gate's second Go helper: what the pinned kube-apiserver (k8s.io/kubernetes,
// the 1.35 line) does on create, offline, with its own code, where tools/fluxbuild cannot run it:
//
//   - op "builtin" (builtin.go): built-in objects through their REST strategies (PrepareForCreate and
//     Validate), after the apiserver's decoding, defaulting and conversion;
//   - op "pods" (pods.go, quota.go): the pods KubeRay would create for a RayJob, RayCluster or RayService, made by
//     KubeRay's own builders (DefaultHeadPodTemplate, DefaultWorkerPodTemplate, BuildPod,
//     GetSubmitterTemplate, as its controllers call them), each taken through the apiserver's create
//     path for pods in its namespace (the LimitRanger's defaults, the pod strategy), then the
//     PodSecurity admission of its namespace's level (security.go), then the ResourceQuota admission of all of them
//     together;
//   - op "network" (netpol.go): the traffic the pods KubeRay would create for a Ray object need (between them, from the
//     KubeRay operator and the submitter) that the cluster's NetworkPolicies drop, by cyclonus' NetworkPolicy simulator;
//   - op "stored" (builtin.go): each object as the apiserver stores it, with its version's defaults (a LimitRange's
//     default limits and requests, which Kueue reads), the answer a list of objects.
//
// The RayJob and RayCluster CRDs carry the pod template's OpenAPI schema without the apiserver's pod
// validation: a fractional GPU, GPU requests other than limits, an uppercase container name or a mount
// of an undeclared volume pass the apiserver and Kueue on the RayJob, which Kueue admits; then every
// pod KubeRay creates is refused and the job holds its quota without running. This is a process of its
// own because k8s.io/kubernetes and Kueue (linked by tools/fluxbuild) register a feature gate of the
// same name (DynamicResourceAllocation) into one registry, which cannot share a process.
//
// Protocol (as tools/fluxbuild): one JSON request per line on stdin, {"id": N, "op": OP, "objects":
// [...][, "related": [[...]...]][, "with_pods": true]}; one answer line per request, {"id": N, "answer":
// [result]} or {"id": N, "error": "..."}, one result per object: {"errors": [{"field", "type", "detail",
// "message"}], "quota": [...][, "pods": {role: pod}]}. For "pods", `related` holds per object the
// LimitRanges and ResourceQuotas of its namespace on its cluster; a field names the path in the object
// the user wrote (the template the pod came from); "quota" are the ResourceQuota admission's refusals.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/capabilities"
	ctrl "sigs.k8s.io/controller-runtime"
)

type request struct {
	ID      int                        `json:"id"`
	Op      string                     `json:"op"`
	Objects []map[string]interface{}   `json:"objects,omitempty"`
	Related [][]map[string]interface{} `json:"related,omitempty"`
	// Olds: per object of a builtin-update request, the object as the cluster holds it (the base tree's render).
	Olds []map[string]interface{} `json:"olds,omitempty"`
	// WithPods: the answer carries the pods too (the parity test creates them on a real apiserver).
	WithPods bool `json:"with_pods,omitempty"`
	// place: the cluster's Node objects, and per object what Kueue adds to each of its pod sets (by role: head,
	// worker NAME, submitter; a plain workload's pods: KIND NAME); Related: the LimitRanges of each object's namespace.
	Nodes  []corev1.Node             `json:"nodes,omitempty"`
	Assign []map[string]podSetAssign `json:"assign,omitempty"`
}

type fieldError struct {
	Field   string `json:"field"`
	Type    string `json:"type"`
	Detail  string `json:"detail"`
	Message string `json:"message"`
	// Object: for a refusal by another object of the namespace (a ResourceQuota), that object as
	// Kind/namespace/name, so that the caller can say where it is written.
	Object string `json:"object,omitempty"`
	// Zero: for a ResourceQuota refusal, the resources whose hard limit is 0 when only those are exceeded (the quota
	// keeps out whatever it matches: the cause is its value, not the job's size).
	Zero []string `json:"zero,omitempty"`
}

type result struct {
	Errors []fieldError `json:"errors"`
	Quota  []fieldError `json:"quota"`
	// Security: the PodSecurity admission's refusals of the pods (security.go), each naming its template.
	Security []fieldError           `json:"security"`
	Pods     map[string]*corev1.Pod `json:"pods,omitempty"`
	// Submitter: the submitter Job KubeRay's RayJob controller would create (with_pods only; the parity test creates it).
	Submitter *batchv1.Job `json:"submitter,omitempty"`
}

func main() {
	// A short-lived helper of one run, as tools/fluxbuild: no garbage collection until the heap nears a
	// limit (unless GOGC or GOMEMLIMIT say otherwise).
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(-1)
		debug.SetMemoryLimit(256 << 20)
	}
	ctrl.SetLogger(logr.Discard()) // KubeRay's builders log through controller-runtime
	// As kube-apiserver's --allow-privileged=true (cmd/kube-apiserver server.go calls the same Setup): AKS's apiserver
	// and the embedded control plane (harness/cluster/controlplane.py) admit privileged containers, which the pod
	// validation otherwise refuses ("disallowed by cluster policy"), e.g. the NVIDIA device plugin chart's.
	capabilities.Setup(true, 0)
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	enc := json.NewEncoder(os.Stdout)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) == 0 && err == io.EOF {
			return
		}
		if err != nil && err != io.EOF {
			fatal("reading request: %v", err)
		}
		var req request
		if err := json.Unmarshal(line, &req); err != nil {
			fatal("reading request: %v", err)
		}
		resp := map[string]interface{}{"id": req.ID}
		results := make([]result, len(req.Objects))
		switch req.Op {
		case "pods":
			for i, obj := range req.Objects {
				var related []map[string]interface{}
				if i < len(req.Related) {
					related = req.Related[i]
				}
				if results[i] = check(obj, related); !req.WithPods {
					results[i].Pods, results[i].Submitter = nil, nil
				}
			}
			resp["answer"] = results
		case "network": // per object: the traffic its Ray cluster needs that the NetworkPolicies in `related` drop (netpol.go)
			answers := make([][]refusal, len(req.Objects))
			for i, obj := range req.Objects {
				var related []map[string]interface{}
				if i < len(req.Related) {
					related = req.Related[i]
				}
				if answers[i] = networkRefusals(obj, related); answers[i] == nil {
					answers[i] = []refusal{}
				}
			}
			resp["answer"] = answers
		case "stored":
			stored := make([]map[string]interface{}, len(req.Objects))
			for i, obj := range req.Objects {
				stored[i] = storedForm(obj)
			}
			resp["answer"] = stored
		case "builtin":
			for i, obj := range req.Objects {
				results[i] = result{Errors: []fieldError{}, Quota: []fieldError{}, Security: []fieldError{}}
				causes := builtinErrors(obj)
				if len(causes) == 0 && obj["apiVersion"] == "v1" && obj["kind"] == "Namespace" {
					causes = namespaceCauses(obj) // the PodSecurity admission's check of its labels
				}
				for _, c := range causes {
					results[i].Errors = append(results[i].Errors, causeError(c))
				}
			}
			resp["answer"] = results
		case "builtin-update":
			for i, obj := range req.Objects {
				results[i] = result{Errors: []fieldError{}, Quota: []fieldError{}, Security: []fieldError{}}
				if i < len(req.Olds) {
					for _, c := range builtinUpdateErrors(obj, req.Olds[i]) {
						results[i].Errors = append(results[i].Errors, causeError(c))
					}
				}
			}
			resp["answer"] = results
		case "node-pools":
			for i, obj := range req.Objects {
				results[i] = result{Errors: []fieldError{}, Quota: []fieldError{}, Security: []fieldError{}}
				for _, c := range nodePoolCauses(obj) {
					results[i].Errors = append(results[i].Errors, causeError(c))
				}
			}
			resp["answer"] = results
		case "admitted": // per pod template: its nodeSelector and tolerations after the RuntimeClass admission
			answers := make([]map[string]interface{}, len(req.Objects))
			for i, obj := range req.Objects {
				var related []map[string]interface{}
				if i < len(req.Related) {
					related = req.Related[i]
				}
				answers[i] = admittedScheduling(obj, related)
			}
			resp["answer"] = answers
		case "place":
			if answers, err := placeAll(req); err != nil {
				resp["error"] = err.Error()
			} else {
				resp["answer"] = answers
			}
		default:
			resp["error"] = fmt.Sprintf("unknown op %q", req.Op)
		}
		if err := enc.Encode(resp); err != nil {
			fatal("%v", err)
		}
	}
}

func fatal(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "kubecheck: "+format+"\n", args...)
	os.Exit(2)
}
