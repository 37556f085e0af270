package main

// What an expression refers to, and why a value is not known before apply.

import (
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// throughLocals calls fn for every traversal an expression reads, following locals into their expressions.
func (e *evaluator) throughLocals(expr hcl.Expression, visited map[string]bool, fn func(t hcl.Traversal, ref string)) {
	for _, t := range expr.Variables() {
		ref := traversalRef(t)
		if visited[ref] {
			continue
		}
		visited[ref] = true
		if t.RootName() != "local" {
			fn(t, ref)
		} else if l := e.mod.Locals[strings.TrimPrefix(ref, "local.")]; l != nil {
			e.throughLocals(l.Expr, visited, fn)
		}
	}
}

// whyUnknown names what makes an expression unknown before apply: variables nobody set, and the
// resources and data sources it reads (through locals too).
func (e *evaluator) whyUnknown(expr hcl.Expression) []string {
	var out []string
	e.throughLocals(expr, map[string]bool{}, func(t hcl.Traversal, ref string) {
		switch t.RootName() {
		case "var":
			if arg := e.arg(t); arg != nil {
				out = append(out, e.parent.whyUnknown(arg)...)
			} else if len(t) >= 2 {
				val, _ := e.ev.EvaluateExpr(&hclsyntax.ScopeTraversalExpr{Traversal: t[:2], SrcRange: t.SourceRange()}, cty.DynamicPseudoType)
				if !val.IsWhollyKnown() {
					out = append(out, ref+" has no default and no value is set")
				}
			}
		case "count", "each", "path", "terraform", "self":
		case "data":
			out = append(out, ref+" is read during apply")
		default:
			out = append(out, ref+" is known only after apply")
		}
	})
	return out
}

// inputs names the input variables an expression depends on, directly or through locals, in order.
func (e *evaluator) inputs(expr hcl.Expression) []string {
	var out []string
	e.throughLocals(expr, map[string]bool{}, func(t hcl.Traversal, ref string) {
		if arg := e.arg(t); arg != nil {
			out = append(out, e.parent.inputs(arg)...)
		} else if t.RootName() == "var" && e.parent == nil {
			out = append(out, strings.TrimPrefix(ref, "var."))
		}
	})
	return out
}

func refs(expr hcl.Expression) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range expr.Variables() {
		if r := traversalRef(t); !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// traversalRef is the address a traversal names: var.x, local.y, type.name, data.type.name.
func traversalRef(t hcl.Traversal) string {
	parts := []string{t.RootName()}
	n := 1 // var.x, local.y, resource_type.name
	if t.RootName() == "data" {
		n = 2
	}
	for _, step := range t[1:] {
		if n == 0 {
			break
		}
		if a, ok := step.(hcl.TraverseAttr); ok {
			parts = append(parts, a.Name)
			n--
		} else {
			break
		}
	}
	return strings.Join(parts, ".")
}

// reads names the resource and data source attributes an expression reads, through locals too:
// "azurerm_kubernetes_cluster.this.oidc_issuer_url" (an index after the address is skipped).
func (e *evaluator) reads(expr hcl.Expression, visited map[string]bool) []string {
	var out []string
	for _, t := range expr.Variables() {
		ref := traversalRef(t)
		switch t.RootName() {
		case "var":
			if arg := e.arg(t); arg != nil {
				out = append(out, e.parent.reads(arg, map[string]bool{})...)
			}
			continue
		case "count", "each", "path", "terraform", "self", "module":
			continue
		case "local":
			if l := e.mod.Locals[strings.TrimPrefix(ref, "local.")]; l != nil && !visited[ref] {
				visited[ref] = true
				out = append(out, e.reads(l.Expr, visited)...)
			}
			continue
		}
		skip := 2 // resource_type.name
		if t.RootName() == "data" {
			skip = 3
		}
		for _, step := range t[min(skip, len(t)):] {
			if _, ok := step.(hcl.TraverseIndex); ok {
				continue
			}
			if a, ok := step.(hcl.TraverseAttr); ok && e.parent != nil {
				out = append(out, "module."+e.module+"."+ref+"."+a.Name)
			} else if ok {
				out = append(out, ref+"."+a.Name)
			}
			break
		}
	}
	return out
}
