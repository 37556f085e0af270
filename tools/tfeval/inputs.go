package main

// Values from tfvars files and -var style JSON, provider versions from the lock file, and the
// encoding check of the configuration files.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/terraform-linters/tflint/terraform"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// bound evaluates its expression with count.index / each.* in scope (a child of the context
// Terraform's evaluator builds, so every other reference and function is Terraform's).
type bound struct {
	hcl.Expression
	vars map[string]cty.Value
}

func (b bound) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	child := ctx.NewChild()
	child.Variables = b.vars
	return b.Expression.Value(child)
}

func (b bound) UnwrapExpression() hcl.Expression { return b.Expression }

// -- values files ------------------------------------------------------------------------------

type fileValue struct {
	Value interface{} `json:"value"`
	Known bool        `json:"known"`
	File  string      `json:"file"`
	Line  int         `json:"line"`
	val   cty.Value
}

func readValues(path string) (map[string]*fileValue, hcl.Diagnostics) {
	parse := hclparse.NewParser().ParseHCLFile
	if strings.HasSuffix(path, ".json") { // a .tfvars.json file: JSON syntax, as Terraform's values loader reads it
		parse = hclparse.NewParser().ParseJSONFile
	}
	f, diags := parse(path)
	out := map[string]*fileValue{}
	if diags.HasErrors() || f == nil {
		return out, diags
	}
	attrs, d := f.Body.JustAttributes()
	diags = diags.Extend(d)
	for name, a := range attrs {
		val, d := a.Expr.Value(nil) // a values file holds literals: Terraform gives it no variables or functions
		diags = diags.Extend(d)
		out[name] = &fileValue{Value: toJSON(val), Known: val.IsWhollyKnown(), File: path, Line: a.Range.Start.Line, val: val}
	}
	return out, diags
}

func inputValues(vals map[string]*fileValue) terraform.InputValues {
	out := terraform.InputValues{}
	for name, v := range vals {
		out[name] = &terraform.InputValue{Value: v.val}
	}
	return out
}

func tfvars(path string) interface{} {
	vals, diags := readValues(path)
	res := &evalResult{Diagnostics: []diagnostic{}, seen: map[string]bool{}}
	res.add(diags)
	return map[string]interface{}{"diagnostics": res.Diagnostics, "values": vals}
}

func jsonValues(raw map[string]json.RawMessage) (terraform.InputValues, hcl.Diagnostics) {
	out := terraform.InputValues{}
	var diags hcl.Diagnostics
	for name, msg := range raw {
		ty, err := ctyjson.ImpliedType(msg)
		var val cty.Value
		if err == nil {
			val, err = ctyjson.Unmarshal(msg, ty)
		}
		if err != nil {
			diags = diags.Append(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value for variable",
				Detail: fmt.Sprintf("%s: %s", name, err)})
			continue
		}
		out[name] = &terraform.InputValue{Value: val}
	}
	return out, diags
}

// providers: required_providers of the terraform blocks, with the versions the lock file records.
func providers(mod *terraform.Module, lock string) map[string]*provider {
	out := map[string]*provider{}
	for _, f := range mod.Files {
		b, ok := f.Body.(*hclsyntax.Body)
		if !ok {
			continue
		}
		for _, tb := range b.Blocks {
			if tb.Type != "terraform" {
				continue
			}
			for _, rp := range tb.Body.Blocks {
				if rp.Type != "required_providers" {
					continue
				}
				for name, a := range rp.Body.Attributes {
					val, diags := a.Expr.Value(nil)
					p := &provider{}
					if !diags.HasErrors() && val.IsWhollyKnown() && val.Type().IsObjectType() {
						if val.Type().HasAttribute("source") {
							p.Source = val.GetAttr("source").AsString()
						}
						if val.Type().HasAttribute("version") {
							p.Constraint = val.GetAttr("version").AsString()
						}
					}
					out[name] = p
				}
			}
		}
	}
	if lock == "" {
		return out
	}
	f, diags := hclparse.NewParser().ParseHCLFile(lock)
	if diags.HasErrors() || f == nil {
		return out
	}
	if b, ok := f.Body.(*hclsyntax.Body); ok {
		for _, pb := range b.Blocks {
			if pb.Type != "provider" || len(pb.Labels) != 1 {
				continue
			}
			name := pb.Labels[0][strings.LastIndex(pb.Labels[0], "/")+1:]
			if a, ok := pb.Body.Attributes["version"]; ok {
				if val, d := a.Expr.Value(nil); !d.HasErrors() && val.Type() == cty.String {
					if out[name] == nil {
						out[name] = &provider{}
					}
					out[name].Locked = val.AsString()
				}
			}
		}
	}
	return out
}

// encoding: Terraform's configuration language is UTF-8 only, but HCL's scanner lets other bytes
// through inside comments; name the first one of each file, with its line.
func encoding(dir string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	paths, _ := filepath.Glob(filepath.Join(dir, "*.tf"))
	for _, path := range paths {
		src, err := os.ReadFile(path)
		if err != nil || utf8.Valid(src) {
			continue // an unreadable file: the loader says so
		}
		at := 0
		for at < len(src) {
			r, n := utf8.DecodeRune(src[at:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			at += n
		}
		line := bytes.Count(src[:at], []byte("\n")) + 1
		diags = diags.Append(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid character encoding",
			Detail:  fmt.Sprintf("byte 0x%02x is not UTF-8; Terraform configuration files must be UTF-8 encoded.", src[at]),
			Subject: &hcl.Range{Filename: path, Start: hcl.Pos{Line: line, Column: 1}, End: hcl.Pos{Line: line, Column: 1}}})
	}
	return diags
}
