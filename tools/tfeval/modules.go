package main

// The root module's module calls, as Terraform's loader reads them (BuildConfig with local modules walked):
// where each is written, its source, whether it is local, and what resource types the loaded module (and the
// modules it calls) declare. A local module called once (no count / for_each) that calls no module itself is read
// (readModule): its resources are evaluated with the call's arguments as inputs, listed with the root's; others: read false.

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
	e.readModule(block, &call)
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

// readModule evaluates the resources of a local module Terraform's loader loaded, called once (no count / for_each)
// and calling no module itself, as tflint's NewModuleRunners does: the call's arguments are evaluated with this
// (the root) evaluator, and the module's with an evaluator of its own (Config: the root, ModulePath: the module,
// VariableValues: terraform.VariableValues with those inputs). Its resources carry the module's name; what their
// arguments refer to and depend on is traced through the call's arguments to the root (lifted, below).
func (e *evaluator) readModule(block *hclsyntax.Block, call *moduleCall) {
	child := e.ev.Config.Children[call.Name]
	if child == nil || !call.Local || len(child.Module.ModuleCalls) > 0 || e.parent != nil {
		return
	}
	if _, ok := block.Body.Attributes["count"]; ok {
		return
	}
	if _, ok := block.Body.Attributes["for_each"]; ok {
		return
	}
	args, inputs := map[string]hcl.Expression{}, terraform.InputValues{}
	for name, a := range block.Body.Attributes {
		if child.Module.Variables[name] == nil {
			continue // source, version, providers, depends_on
		}
		val, diags := e.ev.EvaluateExpr(a.Expr, cty.DynamicPseudoType)
		if diags.HasErrors() {
			return // terraform-expression reports it (the loader's own evaluation of the call)
		}
		args[name], inputs[name] = a.Expr, &terraform.InputValue{Value: val}
	}
	values, diags := terraform.VariableValues(child, inputs)
	if diags.HasErrors() {
		return
	}
	ce := &evaluator{
		ev:  &terraform.Evaluator{Meta: e.ev.Meta, ModulePath: child.Path.UnkeyedInstanceShim(), Config: e.ev.Config, VariableValues: values},
		mod: child.Module, sources: e.sources, res: e.res, setAt: map[string]*fileValue{}, declared: declared(child.Module.Files),
		syntax: syntaxBodies(child.Module.Files), parent: e, module: call.Name, args: args,
	}
	files := make([]string, 0, len(child.Module.Files))
	for name := range child.Module.Files {
		files = append(files, name)
	}
	sort.Strings(files)
	for _, name := range files {
		if _, ok := child.Module.Files[name].Body.(*hclsyntax.Body); !ok {
			return // JSON syntax: this helper does not describe it; the module stays unread
		}
	}
	for _, name := range files {
		for _, b := range child.Module.Files[name].Body.(*hclsyntax.Body).Blocks {
			if b.Type == "resource" && len(b.Labels) == 2 {
				r := ce.resource(b)
				r.Module = call.Name
				e.res.Resources = append(e.res.Resources, r)
			}
		}
	}
	call.Read = true
}

// arg is the call's argument for the module's variable of a var.x traversal (nil in the root, or when the call sets none).
func (e *evaluator) arg(t hcl.Traversal) hcl.Expression {
	if e.parent == nil || t.RootName() != "var" || len(t) < 2 {
		return nil
	}
	if a, ok := t[1].(hcl.TraverseAttr); ok {
		return e.args[a.Name]
	}
	return nil
}

// refsOf is refs, lifted to the root: a module's var.x is what the call's argument refers to, its own resources and
// locals are prefixed module.<name>. (count, each, path, terraform, self stay as they are).
func (e *evaluator) refsOf(expr hcl.Expression) []string {
	if e.parent == nil {
		return refs(expr)
	}
	var out []string
	seen := map[string]bool{}
	for _, t := range expr.Variables() {
		var found []string
		switch t.RootName() {
		case "var":
			if arg := e.arg(t); arg != nil {
				found = e.parent.refsOf(arg)
			}
		case "count", "each", "path", "terraform", "self":
			found = []string{traversalRef(t)}
		default:
			found = []string{"module." + e.module + "." + traversalRef(t)}
		}
		for _, r := range found {
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	return out
}

// passes is the root variable whose value an expression is (`var.x`, in a module through a call argument `var.y`), or "".
func (e *evaluator) passes(expr hcl.Expression) string {
	t, diags := hcl.AbsTraversalForExpr(expr)
	if diags.HasErrors() || t.RootName() != "var" || len(t) != 2 {
		return ""
	}
	if e.parent != nil {
		if arg := e.arg(t); arg != nil {
			return e.parent.passes(arg)
		}
		return ""
	}
	if a, ok := t[1].(hcl.TraverseAttr); ok {
		return a.Name
	}
	return ""
}
