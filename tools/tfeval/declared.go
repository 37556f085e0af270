package main

// Terraform's "Reference to undeclared resource", which tflint's evaluator leaves out (it evaluates every managed
// resource as unknown, declared or not): Terraform reports it for a reference in any expression (evaluate.go,
// GetResource) and for a depends_on entry, which `terraform validate` evaluates as a reference (validateDependsOn in
// node_resource_validate.go). References are parsed with Terraform's own addrs.ParseRef (tflint's port).

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/terraform-linters/tflint/terraform/addrs"
)

// declared is every `resource` and `data` block of the module, "type.name" / "data.type.name", from every file (native
// syntax or JSON), as Terraform's loader reads them.
func declared(files map[string]*hcl.File) map[string]bool {
	schema := &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "resource", LabelNames: []string{"type", "name"}},
		{Type: "data", LabelNames: []string{"type", "name"}}}}
	out := map[string]bool{}
	for _, f := range files {
		content, _, _ := f.Body.PartialContent(schema)
		for _, b := range content.Blocks {
			addr := b.Labels[0] + "." + b.Labels[1]
			if b.Type == "data" {
				addr = "data." + addr
			}
			out[addr] = true
		}
	}
	return out
}

// checkRefs reports the traversals that name a resource the module does not declare, with Terraform's words.
func (e *evaluator) checkRefs(traversals []hcl.Traversal) {
	for _, t := range traversals {
		ref, diags := addrs.ParseRef(t)
		if diags.HasErrors() || ref == nil {
			continue // not a reference Terraform can read: the evaluation of the expression says so
		}
		subject := ref.Subject
		if ri, ok := subject.(addrs.ResourceInstance); ok {
			subject = ri.ContainingResource()
		}
		r, ok := subject.(addrs.Resource)
		if !ok {
			continue
		}
		key, mode := r.Type+"."+r.Name, "managed"
		if r.Mode == addrs.DataResourceMode {
			key, mode = "data."+key, "data"
		}
		if e.declared[key] {
			continue
		}
		rng, in := ref.SourceRange, "the root module"
		if e.module != "" {
			in = "module." + e.module
		}
		e.res.add(hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Reference to undeclared resource",
			Detail: fmt.Sprintf("A %s resource %q %q has not been declared in %s.", mode, r.Type, r.Name, in), Subject: &rng}})
	}
}

// dependsOn checks a depends_on list as Terraform decodes it (hcl.ExprList, then hcl.AbsTraversalForExpr per entry).
func (e *evaluator) dependsOn(expr hcl.Expression) {
	items, diags := hcl.ExprList(expr)
	e.res.add(diags)
	var traversals []hcl.Traversal
	for _, item := range items {
		t, d := hcl.AbsTraversalForExpr(item)
		e.res.add(d)
		if !d.HasErrors() {
			traversals = append(traversals, t)
		}
	}
	e.checkRefs(traversals)
}
