// Command fluxbuild is the gate's one Go helper process: it renders the repository with
// kustomize-controller's own library (render.go), validates the rendered objects with the pinned
// kube-apiserver's, Kueue's and KubeRay's own code (check.go), and answers placement and
// label-selector questions with the Kubernetes libraries (match.go), all in one process per run.
//
// Protocol: one JSON request per line on stdin, {"id": N, "op": OP, ...}; one JSON line per
// request on stdout, {"id": N, "answer": ...} or {"id": N, "error": "..."}, written as each
// request finishes. Requests run concurrently (checks and placement questions beside a render);
// renders run one at a time, as kustomize keeps process-global state.
//
//	render  {"session", "root", "prefix", "skip_dirs", "jobs"[, "probe"]} -> [result] (render.go; a probe renders in
//	        a scratch tree of some files of the session's copy with others written over them)
//	release {"session"}                                     -> null: drops the session's copies
//	prepare {"schema_dir", "kubernetes_version", "kinds"}   -> null at once; loads the CRDs and
//	        builds the validators of those kinds in the background (check.go)
//	check   {"schema_dir", "kubernetes_version", "objects"[, "related"]} -> [checkResult] (check.go)
//	match   {"queries"}                                     -> [answer] (match.go)
//	admit   {"schema_dir", "kubernetes_version", "admit"} -> [admitAnswer] (kueueadmit.go): whether the pinned
//	        Kueue's flavor assigner fits each RayJob's Workload in its ClusterQueue on the idle cluster
//	kueue-config {"text"}                                   -> {"problems", "config"} (kueueconfig.go): why
//	        the pinned Kueue manager would refuse this configuration and exit, else what it runs with
//	operator-gates {"operator", "flags"}                   -> {"problems"} (operatorgates.go): why the operator (kueue or
//	        kuberay) would refuse this --feature-gates value and exit
//
// Its end of stdin ends the process once every request is answered.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"sync"
	"syscall"
	"time"
)

type request struct {
	ID                int                      `json:"id"`
	Op                string                   `json:"op"`
	Session           string                   `json:"session,omitempty"`
	Root              string                   `json:"root,omitempty"`
	Prefix            string                   `json:"prefix,omitempty"` // render: the root's directory in its Git work tree
	SkipDirs          []string                 `json:"skip_dirs,omitempty"`
	Jobs              []job                    `json:"jobs,omitempty"`
	SchemaDir         string                   `json:"schema_dir,omitempty"`
	KubernetesVersion string                   `json:"kubernetes_version,omitempty"`
	Kinds             [][2]string              `json:"kinds,omitempty"`
	Objects           []map[string]interface{} `json:"objects,omitempty"`
	Queries           []query                  `json:"queries,omitempty"`
	Text              string                   `json:"text,omitempty"`
	Flags             string                   `json:"flags,omitempty"`    // kueue-config: the manager's --feature-gates
	Operator          string                   `json:"operator,omitempty"` // operator-gates: kueue or kuberay
	Probe             *probe                   `json:"probe,omitempty"`
	// Related: per object of a check, the cluster's objects its admission depends on (a RayJob's
	// namespace's LimitRanges), in the objects' order; absent for an object checked on its own.
	Related [][]map[string]interface{} `json:"related,omitempty"`
	// Olds: per object of an update request, the object as the cluster holds it (the base tree's render).
	Olds  []map[string]interface{} `json:"olds,omitempty"`
	Helm  *helmRequest             `json:"helm,omitempty"`
	Admit *admitRequest            `json:"admit,omitempty"`
	Pins  *pinsRequest             `json:"pins,omitempty"`
	// KueueManager: the Kueue manager the objects of a check or admit request meet (its feature gates); null: the
	// chart's defaults.
	KueueManager *managerRef `json:"kueue_manager,omitempty"`
}

type response struct {
	ID     int         `json:"id"`
	Answer interface{} `json:"answer"`
	Error  string      `json:"error,omitempty"`
}

// requestError ends one request with an error answer (a panic carrying it is recovered per request).
type requestError struct{ msg string }

func failRequest(format string, args ...interface{}) {
	panic(requestError{fmt.Sprintf(format, args...)})
}

func main() {
	// A short-lived helper of one run: no garbage collection until the heap nears a limit (unless
	// GOGC or GOMEMLIMIT say otherwise). A gate run peaks at about 150 MB without collecting; at Go's
	// default the collector takes about a fifth of the helper's CPU time on 2 cores, at GOGC=400 a tenth.
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(-1)
		debug.SetMemoryLimit(512 << 20)
	}
	// A caller that exits without waiting for its last answers (the gate's CLI does) makes writing them
	// fail with EPIPE instead of killing the process before it removes its copies.
	signal.Ignore(syscall.SIGPIPE)
	operatorFeatures() // each operator's gates at their defaults, read before any request sets one
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	enc := json.NewEncoder(os.Stdout)
	var (
		writing sync.Mutex
		pending sync.WaitGroup
	)
	defer removeCopies()
	if path := os.Getenv("FLUXBUILD_TRACE"); path != "" { // when each request began and how long it took, for the benchmarks
		if f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			trace = log.New(f, fmt.Sprintf("fluxbuild[%d] ", os.Getpid()), 0)
		}
	}
	if path := os.Getenv("FLUXBUILD_CPUPROFILE"); path != "" { // a CPU profile of the run, for the benchmarks
		if f, err := os.Create(path); err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
			stopProfile = pprof.StopCPUProfile
		}
	}
	// --prerender ROOT [--skip-dir NAME]...: build ROOT's plain kustomization directories now, before any request
	// (prerender.go), for the caller that sends its render request once it has loaded.
	var prerenderRoot string
	var skipDirs []string
	flag.StringVar(&prerenderRoot, "prerender", "", "build this repository's plain kustomization directories at start")
	flag.Func("skip-dir", "a directory name the copy leaves out (repeatable)", func(v string) error { skipDirs = append(skipDirs, v); return nil })
	flag.Parse()
	if prerenderRoot != "" {
		sort.Strings(skipDirs)
		rendering.Lock() // held until it is done: a render request that comes first waits for it
		go prerender(prerenderRoot, skipDirs)
	}
	for {
		line, err := in.ReadBytes('\n')
		if len(line) == 0 && err == io.EOF {
			break
		}
		if err != nil && err != io.EOF {
			fatal("reading request: %v", err)
		}
		var req request
		if err := json.Unmarshal(line, &req); err != nil {
			fatal("reading request: %v", err)
		}
		pending.Add(1)
		go func() {
			defer pending.Done()
			resp := handle(req)
			writing.Lock()
			defer writing.Unlock()
			if err := enc.Encode(resp); err != nil {
				fatal("%v", err)
			}
		}()
	}
	pending.Wait()
}

func handle(req request) (resp response) {
	resp.ID = req.ID
	if trace != nil {
		began := time.Now()
		defer func() {
			trace.Printf("%-12s id=%-3d jobs=%-2d began %6.1f ms, took %6.1f ms", req.Op, req.ID, len(req.Jobs),
				float64(began.Sub(started).Microseconds())/1000, float64(time.Since(began).Microseconds())/1000)
		}()
	}
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(requestError); ok {
				resp.Answer, resp.Error = nil, e.msg
				return
			}
			resp.Answer, resp.Error = nil, fmt.Sprintf("%s failed: %v\n%s", req.Op, r, debug.Stack())
		}
	}()
	switch req.Op {
	case "render":
		resp.Answer = render(req.Session, req.Root, req.Prefix, req.SkipDirs, req.Jobs, req.Probe)
	case "release":
		release(req.Session)
	case "prepare":
		schemas(req.SchemaDir, req.KubernetesVersion).prepare(req.Kinds)
	case "check":
		integrations := managerIntegrations(req.KueueManager)
		underGates(req.KueueManager, func() {
			resp.Answer = schemas(req.SchemaDir, req.KubernetesVersion).check(req.Objects, req.Related, integrations)
		})
	case "update":
		integrations := managerIntegrations(req.KueueManager)
		underGates(req.KueueManager, func() {
			resp.Answer = schemas(req.SchemaDir, req.KubernetesVersion).checkUpdates(req.Objects, req.Olds, integrations)
		})
	case "admit":
		if req.Admit == nil {
			failRequest("op admit without admit")
		}
		if req.Admit.Config != nil { // loaded before its gates are taken: loading a configuration takes them too
			kueueConfig(*req.Admit.Config, "")
		}
		underGates(req.KueueManager, func() { resp.Answer = admitAnswers(schemas(req.SchemaDir, req.KubernetesVersion), *req.Admit) })
	case "kueue-config":
		resp.Answer = kueueConfigAnswer(req.Text, req.Flags)
	case "operator-gates":
		resp.Answer = loadedConfig{Problems: append([]configProblem{}, operatorFlagProblems(req.Operator, req.Flags)...)}
	case "helm":
		if req.Helm == nil {
			failRequest("op helm without helm")
		}
		resp.Answer = helmRender(*req.Helm, req.KubernetesVersion)
	case "pins":
		if req.Pins == nil {
			failRequest("op pins without pins")
		}
		resp.Answer = pinsAnswers(*req.Pins)
	case "convert":
		resp.Answer = convertObjects(req.Objects)
	case "match":
		answers := make([]answer, len(req.Queries))
		for i, q := range req.Queries {
			answers[i] = answerQuery(q)
		}
		resp.Answer = answers
	default:
		failRequest("unknown op %q", req.Op)
	}
	return resp
}

var (
	stopProfile = func() {}
	trace       *log.Logger // FLUXBUILD_TRACE
	started     = time.Now()
)

func fatal(format string, args ...interface{}) {
	stopProfile()
	fmt.Fprintf(os.Stderr, "fluxbuild: "+format+"\n", args...)
	removeCopies()
	os.Exit(2)
}
