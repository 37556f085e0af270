// Command tfeval evaluates a Terraform root module the way Terraform reads it, for the static
// gate: the configuration is loaded by Terraform's own loader and expressions are evaluated by
// Terraform's evaluator with Terraform's function table (github.com/terraform-linters/tflint's
// `terraform` package, which carries Terraform's configs, lang and lang/funcs code; HCL v2 and
// cty underneath). Values Terraform only knows after apply (resource attributes, data sources,
// variables nobody set) are unknown, never guessed.
//
// Input on stdin, one JSON request per line; output one JSON line per request:
//
//	{"op": "eval", "root": DIR, "dir": "terraform", "var_files": [PATH], "vars": {NAME: JSON}, "lock": PATH}
//	  -> {"loaded", "providers": {...}, "diagnostics": [...], "variables": {...}, "resources": [...], "modules": [...]}
//	{"op": "tfvars", "root": DIR, "path": PATH}
//	  -> {"diagnostics": [...], "values": {NAME: {"value", "known", "file", "line"}}}
//
// Paths are relative to root (file names in the answer too). var_files are applied in order,
// then vars (like -var). Every diagnostic carries the file and line HCL or Terraform gives it.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"
)

type request struct {
	Op       string                     `json:"op"`
	Root     string                     `json:"root"`
	Dir      string                     `json:"dir"`
	Path     string                     `json:"path"`
	VarFiles []string                   `json:"var_files"`
	Lock     string                     `json:"lock"`
	Vars     map[string]json.RawMessage `json:"vars"`
}

func main() {
	// A short-lived helper: no garbage collection below a 256 MiB heap (a gate run's evaluations
	// allocate less), unless GOGC or GOMEMLIMIT say otherwise.
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(-1)
		debug.SetMemoryLimit(256 << 20)
	}
	in := bufio.NewReader(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) == 0 && err == io.EOF {
			return
		}
		if err != nil && err != io.EOF {
			fmt.Fprintln(os.Stderr, "tfeval: reading stdin:", err)
			os.Exit(2)
		}
		var req request
		var answer interface{}
		if jerr := json.Unmarshal(line, &req); jerr != nil {
			answer = map[string]interface{}{"diagnostics": []diagnostic{{Severity: "error", Summary: "bad request", Detail: jerr.Error()}}}
		} else {
			answer = serve(req)
		}
		if err := out.Encode(answer); err != nil {
			fmt.Fprintln(os.Stderr, "tfeval: writing stdout:", err)
			os.Exit(2)
		}
	}
}

func serve(req request) interface{} {
	if err := os.Chdir(req.Root); err != nil { // Terraform's loader names files relative to the working directory
		return map[string]interface{}{"diagnostics": []diagnostic{{Severity: "error", Summary: "cannot enter root", Detail: err.Error()}}}
	}
	switch req.Op {
	case "eval":
		return evaluate(req)
	case "tfvars":
		return tfvars(req.Path)
	}
	return map[string]interface{}{"diagnostics": []diagnostic{{Severity: "error", Summary: "unknown op", Detail: req.Op}}}
}
