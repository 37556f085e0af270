package main

// The root module's module calls, as Terraform's loader reads them (BuildConfig with local modules walked):
// where each is written, its source, whether it is local, and what resource types the loaded module (and the
// modules it calls) declare. Their resources are not evaluated (read: false): the gate reads the root module.

import (
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/terraform-linters/tflint/terraform"
	"github.com/terraform-linters/tflint/terraform/addrs"
	"github.com/zclconf/go-cty/cty"
)

type moduleCall struct {
	Name   string   `json:"name"`
	Source string   `json:"source"` // as evaluated ("" when it does not evaluate to a known string)
	File   string   `json:"file"`
	Line   int      `json:"line"`
	Local  bool     `json:"local"`           // a ./ or ../ path: Terraform reads it from the checkout
	Read   bool     `json:"read"`            // its resources are among "resources"
	Types  []string `json:"types,omitempty"` // the resource types it declares, its own calls' too; absent when not loaded
	Loaded bool     `json:"loaded"`          // Terraform's loader loaded it (a local module that exists), so Types is complete
	Refs   []string `json:"refs,omitempty"`  // what its arguments refer to, through locals (var.x, type.name, data.type.name, module.y)
}

func (e *evaluator) moduleCall(block *hclsyntax.Block) {
	call := moduleCall{Name: block.Labels[0], File: block.DefRange().Filename, Line: block.DefRange().Start.Line}
	names := make([]string, 0, len(block.Body.Attributes))
	for name := range block.Body.Attributes {
		names = append(names, name)
	}
	sort.Strings(names)
	visited := map[string]bool{}
	for _, name := range names {
		a := block.Body.Attributes[name]
		if name == "source" {
			val, diags := e.ev.EvaluateExpr(a.Expr, cty.String)
			if !diags.HasErrors() && val.IsKnown() && !val.IsNull() {
				call.Source = val.AsString()
				if addr, err := addrs.ParseModuleSource(call.Source); err == nil {
					_, call.Local = addr.(addrs.ModuleSourceLocal)
				}
			}
			continue
		}
		e.throughLocals(a.Expr, visited, func(_ hcl.Traversal, ref string) { call.Refs = append(call.Refs, ref) })
	}
	if child := e.ev.Config.Children[call.Name]; child != nil {
		call.Loaded, call.Types = true, []string{}
		types := map[string]bool{}
		resourceTypes(child, types)
		for t := range types {
			call.Types = append(call.Types, t)
		}
		sort.Strings(call.Types)
	}
	e.res.Modules = append(e.res.Modules, call)
}

func resourceTypes(cfg *terraform.Config, into map[string]bool) {
	for t := range cfg.Module.Resources {
		into[t] = true
	}
	for _, child := range cfg.Children {
		resourceTypes(child, into)
	}
}
