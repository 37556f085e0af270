package main

// Nested blocks as Terraform reads them: `dynamic` blocks expanded with HCL's own extension
// (github.com/hashicorp/hcl/v2/ext/dynblock, which Terraform's lang.Scope.ExpandBlock uses), with
// the for_each and labels evaluated in the context Terraform's evaluator builds (count.index and
// each.* of the resource instance bound), and the result decoded with the schema the block's own
// syntax implies (there is no provider schema here: every argument and block type written is asked
// for).

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/dynblock"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// schemaOf: every argument and block type a body writes, the type a `dynamic` block generates included.
func schemaOf(b *hclsyntax.Body) *hcl.BodySchema {
	s := &hcl.BodySchema{}
	if b == nil {
		return s
	}
	for name := range b.Attributes {
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: name})
	}
	seen := map[string]bool{}
	for _, blk := range b.Blocks {
		typ, labels := blk.Type, len(blk.Labels)
		if typ == "dynamic" {
			if len(blk.Labels) != 1 {
				continue // dynblock reports it
			}
			typ, labels = blk.Labels[0], 0
			if l, ok := blk.Body.Attributes["labels"]; ok {
				if t, ok := l.Expr.(*hclsyntax.TupleConsExpr); ok {
					labels = len(t.Exprs)
				}
			}
		}
		if !seen[typ] {
			seen[typ] = true
			s.Blocks = append(s.Blocks, hcl.BlockHeaderSchema{Type: typ, LabelNames: make([]string, labels)})
		}
	}
	return s
}

// syntaxBodies maps the definition range of every block of the files to the body it is read from (a dynamic block's:
// its `content` block), so that a block dynblock hands back can be decoded with its own schema.
func syntaxBodies(files map[string]*hcl.File) map[hcl.Range]*hclsyntax.Body {
	out := map[hcl.Range]*hclsyntax.Body{}
	var walk func(b *hclsyntax.Body)
	walk = func(b *hclsyntax.Body) {
		for _, blk := range b.Blocks {
			body := blk.Body
			if blk.Type == "dynamic" {
				for _, c := range blk.Body.Blocks {
					if c.Type == "content" {
						body = c.Body
						break
					}
				}
			}
			out[blk.DefRange()] = body
			walk(blk.Body)
		}
	}
	for _, f := range files {
		if b, ok := f.Body.(*hclsyntax.Body); ok {
			walk(b)
		}
	}
	return out
}

// expandVars: the traversals the for_each and labels of a body's dynamic blocks read, at any depth
// (dynblock.WalkExpandVariables, as Terraform's ExpandVariablesHCLDec walks it).
func expandVars(body *hclsyntax.Body, node dynblock.WalkVariablesNode) []hcl.Traversal {
	vars, children := node.Visit(schemaOf(body))
	for _, c := range children {
		child, _ := c.Body().(*hclsyntax.Body)
		vars = append(vars, expandVars(child, c.Node)...)
	}
	return vars
}

// capture is an expression that reads the given traversals and keeps the context it is evaluated in:
// Terraform's evaluator builds that context (variables, locals, functions), dynblock evaluates in it.
type capture struct {
	vars []hcl.Traversal
	rng  hcl.Range
	ctx  **hcl.EvalContext
}

func (c capture) Variables() []hcl.Traversal { return c.vars }
func (c capture) Range() hcl.Range           { return c.rng }
func (c capture) StartRange() hcl.Range      { return c.rng }
func (c capture) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	*c.ctx = ctx
	return cty.DynamicVal, nil
}

// expand is a block body with its dynamic blocks expanded as Terraform expands them.
func (e *evaluator) expand(b *hclsyntax.Body, iter map[string]cty.Value) hcl.Body {
	var ctx *hcl.EvalContext
	var expr hcl.Expression = capture{vars: expandVars(b, dynblock.WalkExpandVariables(b)), rng: b.SrcRange, ctx: &ctx}
	if iter != nil {
		expr = bound{Expression: expr, vars: iter}
	}
	_, diags := e.ev.EvaluateExpr(expr, cty.DynamicPseudoType)
	e.res.add(diags)
	if ctx == nil { // the references did not resolve (reported): evaluate what can be
		ctx = &hcl.EvalContext{}
	}
	return dynblock.Expand(b, ctx)
}
