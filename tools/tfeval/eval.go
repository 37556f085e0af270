package main

import (
	"fmt"
	"log"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/spf13/afero"
	"github.com/terraform-linters/tflint/terraform"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

func init() { log.SetOutput(noLog{}) } // the loader logs at [INFO]/[DEBUG]; stderr is for failures

type noLog struct{}

func (noLog) Write(p []byte) (int, error) { return len(p), nil }

type diagnostic struct {
	Severity string `json:"severity"`
	Summary  string `json:"summary"`
	Detail   string `json:"detail,omitempty"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	// Variable: for "Value for undeclared variable", the name the values file sets.
	Variable string `json:"variable,omitempty"`
}

// undeclared is the Extra of a "Value for undeclared variable" diagnostic: the name set.
type undeclared string

// attr is one evaluated argument: its value (unknown parts as null), where it is written, the
// expression as written, what it refers to and, when not wholly known, why.
type attr struct {
	Value   interface{} `json:"value"`
	Known   bool        `json:"known"`
	File    string      `json:"file"`
	Line    int         `json:"line"`
	Text    string      `json:"text"`
	Refs    []string    `json:"refs,omitempty"`
	Unknown []string    `json:"unknown,omitempty"`
	Reads   []string    `json:"reads,omitempty"`  // the resource and data source attributes it reads (refs.go reads)
	Inputs  []string    `json:"inputs,omitempty"` // the input variables it depends on, through locals too
	Passes  string      `json:"passes,omitempty"` // the root variable it is (var.x; in a module, through the call's argument)
	Error   string      `json:"error,omitempty"`
}

type body struct {
	File   string             `json:"file"`
	Line   int                `json:"line"`
	Attrs  map[string]*attr   `json:"attrs"`
	Blocks map[string][]*body `json:"blocks"`
}

type instance struct {
	Key  interface{} `json:"key"` // null without count/for_each, else the index or the for_each key
	Body *body       `json:"body"`
}

type resource struct {
	Module    string     `json:"module,omitempty"` // the module call it is declared in (modules.go); "" in the root module
	Type      string     `json:"type"`
	Name      string     `json:"name"`
	File      string     `json:"file"`
	Line      int        `json:"line"`
	Count     *attr      `json:"count,omitempty"`
	ForEach   *attr      `json:"for_each,omitempty"`
	Instances []instance `json:"instances"`
	// Template: when count/for_each leave no instance (or are unknown), the body evaluated
	// with count.index / each unknown, so that a caller can still say what the resource would be.
	Template *body `json:"template,omitempty"`
}

type variable struct {
	File        string      `json:"file"`
	Line        int         `json:"line"`
	DefaultLine int         `json:"default_line,omitempty"`
	HasDefault  bool        `json:"has_default"`
	Value       interface{} `json:"value"`
	Known       bool        `json:"known"`
}

type provider struct {
	Source     string `json:"source,omitempty"`
	Constraint string `json:"constraint,omitempty"` // required_providers version
	Locked     string `json:"locked,omitempty"`     // the version the lock file records
}

type evalResult struct {
	Loaded      bool                 `json:"loaded"` // false: the module did not load (syntax), nothing was evaluated
	Providers   map[string]*provider `json:"providers"`
	Diagnostics []diagnostic         `json:"diagnostics"`
	Variables   map[string]*variable `json:"variables"`
	Resources   []*resource          `json:"resources"`
	Modules     []moduleCall         `json:"modules"` // the root module's module calls (modules.go)
	seen        map[string]bool
}

func (r *evalResult) add(diags hcl.Diagnostics) {
	for _, d := range diags {
		out := diagnostic{Severity: "error", Summary: d.Summary, Detail: d.Detail}
		if d.Severity == hcl.DiagWarning {
			out.Severity = "warning"
		}
		if rng := d.Subject; rng != nil && rng.Filename != "" {
			out.File, out.Line = rng.Filename, rng.Start.Line
		}
		if name, ok := d.Extra.(undeclared); ok {
			out.Variable = string(name)
		}
		key := fmt.Sprintf("%s\x00%d\x00%s\x00%s", out.File, out.Line, out.Summary, out.Detail)
		if !r.seen[key] { // an expression in a counted resource is evaluated once per instance
			r.seen[key] = true
			r.Diagnostics = append(r.Diagnostics, out)
		}
	}
}

type evaluator struct {
	ev       *terraform.Evaluator
	mod      *terraform.Module
	sources  map[string][]byte
	res      *evalResult
	setAt    map[string]*fileValue
	declared map[string]bool               // the module's resources and data sources (declared.go)
	syntax   map[hcl.Range]*hclsyntax.Body // every block's body by its definition range (expand.go)
	// In a module's evaluator (modules.go): the root's, the call's name and its arguments by variable.
	parent *evaluator
	module string
	args   map[string]hcl.Expression
}

func evaluate(req request) interface{} {
	res := &evalResult{Providers: map[string]*provider{}, Diagnostics: []diagnostic{}, Variables: map[string]*variable{}, Resources: []*resource{}, Modules: []moduleCall{}, seen: map[string]bool{}}
	loader, err := terraform.NewLoader(afero.Afero{Fs: afero.NewOsFs()}, req.Root)
	if err != nil {
		res.Diagnostics = append(res.Diagnostics, diagnostic{Severity: "error", Summary: "cannot load configuration", Detail: err.Error()})
		return res
	}
	if diags := encoding(req.Dir); diags.HasErrors() {
		res.add(diags)
		return res
	}
	mod, diags := loader.LoadRootModule(req.Dir)
	res.add(diags)
	if diags.HasErrors() {
		return res
	}
	res.Loaded = true
	res.Providers = providers(mod, req.Lock)
	values, diags := loader.LoadValuesFiles(req.Dir) // terraform.tfvars and *.auto.tfvars, as Terraform reads them
	res.add(diags)
	setAt := map[string]*fileValue{} // where a values file sets a variable
	for _, path := range req.VarFiles {
		vals, d := readValues(path)
		res.add(d)
		for name, v := range vals {
			setAt[name] = v
			if decl := mod.Variables[name]; decl != nil {
				if _, err := convert.Convert(v.val, decl.ConstraintType); err != nil {
					res.add(hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid value for input variable",
						Detail:  fmt.Sprintf("The given value is not suitable for var.%s declared at %s:%d: %s.", name, decl.DeclRange.Filename, decl.DeclRange.Start.Line, err),
						Subject: &hcl.Range{Filename: v.File, Start: hcl.Pos{Line: v.Line, Column: 1}, End: hcl.Pos{Line: v.Line, Column: 1}}}})
					delete(vals, name) // reported where it is written; evaluated with the default
				}
			}
		}
		values = append(values, inputValues(vals))
	}
	cli, d := jsonValues(req.Vars)
	res.add(d)
	values = append(values, cli)
	for _, set := range values {
		for name := range set {
			if mod.Variables[name] == nil {
				d := &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Value for undeclared variable",
					Detail: fmt.Sprintf("A value is given for %q, which is not declared in %s.", name, req.Dir), Extra: undeclared(name)}
				if v := setAt[name]; v != nil { // the line of the values file that sets it
					d.Subject = &hcl.Range{Filename: v.File, Start: hcl.Pos{Line: v.Line, Column: 1}, End: hcl.Pos{Line: v.Line, Column: 1}}
				}
				res.add(hcl.Diagnostics{d})
			}
		}
	}
	cfg, diags := terraform.BuildConfig(mod, loader.ModuleWalker(terraform.CallLocalModule), req.Root, values...)
	res.add(diags)
	if diags.HasErrors() {
		return res
	}
	varValues, diags := terraform.VariableValues(cfg, values...)
	res.add(diags)
	e := &evaluator{
		ev: &terraform.Evaluator{
			Meta:           &terraform.ContextMeta{Env: terraform.Workspace(), OriginalWorkingDir: req.Root},
			ModulePath:     cfg.Path.UnkeyedInstanceShim(),
			Config:         cfg,
			VariableValues: varValues,
		},
		mod: mod, sources: loader.Sources(), res: res, setAt: setAt, declared: declared(mod.Files), syntax: syntaxBodies(mod.Files),
	}
	e.walk()
	return res
}

// walk evaluates the variables and every resource of the primary files, in file and source order.
func (e *evaluator) walk() {
	files := make([]string, 0, len(e.mod.Files))
	for name := range e.mod.Files {
		files = append(files, name)
	}
	sort.Strings(files)
	for _, name := range files {
		b, ok := e.mod.Files[name].Body.(*hclsyntax.Body)
		if !ok {
			continue // JSON syntax: Terraform reads it, this helper does not describe it
		}
		for _, block := range b.Blocks {
			switch {
			case block.Type == "variable" && len(block.Labels) == 1:
				e.variable(block)
			case block.Type == "resource" && len(block.Labels) == 2:
				e.res.Resources = append(e.res.Resources, e.resource(block))
			case block.Type == "module" && len(block.Labels) == 1:
				e.moduleCall(block)
			case block.Type == "output" || block.Type == "provider" || block.Type == "locals" || block.Type == "data":
				e.body(block.Body, nil, true) // evaluated for their diagnostics only
			}
		}
	}
}

func (e *evaluator) variable(block *hclsyntax.Block) {
	name := block.Labels[0]
	v := &variable{File: block.DefRange().Filename, Line: block.DefRange().Start.Line}
	if def, ok := block.Body.Attributes["default"]; ok {
		v.HasDefault, v.DefaultLine = true, def.SrcRange.Start.Line
	}
	expr := &hclsyntax.ScopeTraversalExpr{Traversal: hcl.Traversal{hcl.TraverseRoot{Name: "var"}, hcl.TraverseAttr{Name: name}},
		SrcRange: block.DefRange()}
	val, diags := e.ev.EvaluateExpr(expr, cty.DynamicPseudoType)
	e.res.add(diags)
	v.Value, v.Known = toJSON(val), val.IsWhollyKnown()
	e.res.Variables[name] = v
	if !diags.HasErrors() && val.IsWhollyKnown() {
		e.validate(name, block)
	}
}

// validate checks a variable's value against its validation blocks, as `terraform plan` does, and
// names the line that sets the value (the values file's, else the default's).
func (e *evaluator) validate(name string, block *hclsyntax.Block) {
	for _, vb := range block.Body.Blocks {
		cond, ok := vb.Body.Attributes["condition"]
		if vb.Type != "validation" || !ok {
			continue
		}
		val, diags := e.ev.EvaluateExpr(cond.Expr, cty.Bool)
		e.res.add(diags)
		if diags.HasErrors() || !val.IsKnown() || val.IsNull() || val.True() {
			continue
		}
		msg := "the value does not meet the variable's validation condition"
		if m, ok := vb.Body.Attributes["error_message"]; ok {
			if mv, d := e.ev.EvaluateExpr(m.Expr, cty.String); !d.HasErrors() && mv.IsKnown() && !mv.IsNull() {
				msg = mv.AsString()
			}
		}
		at := cond.SrcRange
		if v := e.setAt[name]; v != nil {
			at = hcl.Range{Filename: v.File, Start: hcl.Pos{Line: v.Line, Column: 1}, End: hcl.Pos{Line: v.Line, Column: 1}}
		} else if def, ok := block.Body.Attributes["default"]; ok {
			at = def.SrcRange
		}
		e.res.add(hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid value for variable",
			Detail: fmt.Sprintf("var.%s: %s (validation at %s:%d)", name, msg, cond.SrcRange.Filename, cond.SrcRange.Start.Line), Subject: &at}})
	}
}

var metaArgs = map[string]bool{"count": true, "for_each": true, "depends_on": true, "provider": true}
var metaBlocks = map[string]bool{"lifecycle": true, "provisioner": true, "connection": true}

func (e *evaluator) resource(block *hclsyntax.Block) *resource {
	r := &resource{Type: block.Labels[0], Name: block.Labels[1], File: block.DefRange().Filename, Line: block.DefRange().Start.Line,
		Instances: []instance{}}
	if a, ok := block.Body.Attributes["count"]; ok {
		val, out := e.attr(a.AsHCLAttribute(), nil, cty.Number)
		r.Count = out
		if out.Error == "" && val.IsKnown() && !val.IsNull() {
			n, _ := val.AsBigFloat().Int64()
			for i := int64(0); i < n; i++ {
				iter := map[string]cty.Value{"count": cty.ObjectVal(map[string]cty.Value{"index": cty.NumberIntVal(i)})}
				r.Instances = append(r.Instances, instance{Key: i, Body: e.body(block.Body, iter, true)})
			}
		}
	} else if a, ok := block.Body.Attributes["for_each"]; ok {
		val, out := e.attr(a.AsHCLAttribute(), nil, cty.DynamicPseudoType)
		r.ForEach = out
		if out.Error == "" && val.IsWhollyKnown() && !val.IsNull() && val.CanIterateElements() {
			val, _ = val.UnmarkDeep()
			for it := val.ElementIterator(); it.Next(); {
				k, v := it.Element()
				if val.Type().IsSetType() {
					k = v
				}
				if k.Type() != cty.String {
					continue // Terraform rejects it; the for_each diagnostics below say so
				}
				iter := map[string]cty.Value{"each": cty.ObjectVal(map[string]cty.Value{"key": k, "value": v})}
				r.Instances = append(r.Instances, instance{Key: k.AsString(), Body: e.body(block.Body, iter, true)})
			}
		} else if out.Error == "" && out.Known {
			out.Error = "for_each must be a map or a set of strings"
		}
	} else {
		r.Instances = append(r.Instances, instance{Key: nil, Body: e.body(block.Body, nil, true)})
	}
	if len(r.Instances) == 0 {
		r.Template = e.body(block.Body, nil, true)
	}
	return r
}

// body evaluates the arguments and nested blocks of a block, `dynamic` blocks expanded (expand.go), with
// count.index / each.key / each.value bound from iter when given. The meta-arguments and meta-blocks of a
// resource are left out at its top level only (top): below it, `depends_on` or `count` is an ordinary argument.
func (e *evaluator) body(b *hclsyntax.Body, iter map[string]cty.Value, top bool) *body {
	return e.decode(e.expand(b, iter), b, iter, top)
}

func (e *evaluator) decode(expanded hcl.Body, syntax *hclsyntax.Body, iter map[string]cty.Value, top bool) *body {
	out := &body{File: syntax.SrcRange.Filename, Line: syntax.SrcRange.Start.Line, Attrs: map[string]*attr{}, Blocks: map[string][]*body{}}
	content, diags := expanded.Content(schemaOf(syntax))
	e.res.add(diags)
	if content == nil {
		return out
	}
	for name, a := range content.Attributes {
		if top && name == "depends_on" {
			e.dependsOn(a.Expr)
		}
		if top && metaArgs[name] {
			continue
		}
		_, out.Attrs[name] = e.attr(a, iter, cty.DynamicPseudoType)
	}
	for _, block := range content.Blocks {
		inner := e.syntax[block.DefRange]
		if (top && metaBlocks[block.Type]) || inner == nil {
			continue
		}
		child := e.decode(block.Body, inner, iter, false)
		child.Line = block.DefRange.Start.Line
		out.Blocks[block.Type] = append(out.Blocks[block.Type], child)
	}
	return out
}

func (e *evaluator) attr(a *hcl.Attribute, iter map[string]cty.Value, want cty.Type) (cty.Value, *attr) {
	var expr hcl.Expression = a.Expr
	if iter != nil {
		expr = bound{Expression: a.Expr, vars: iter}
	}
	val, diags := e.ev.EvaluateExpr(expr, want)
	e.res.add(diags)
	e.checkRefs(a.Expr.Variables())
	rng := a.Expr.Range()
	out := &attr{File: rng.Filename, Line: a.Range.Start.Line, Text: e.text(rng), Refs: e.refsOf(a.Expr), Passes: e.passes(a.Expr), Reads: e.reads(a.Expr, map[string]bool{}),
		Inputs: e.inputs(a.Expr)}
	if diags.HasErrors() {
		for _, d := range diags {
			if d.Severity == hcl.DiagError {
				out.Error = strings.TrimSpace(d.Summary + ": " + d.Detail)
				break
			}
		}
		return val, out
	}
	out.Value, out.Known = toJSON(val), val.IsWhollyKnown()
	if !out.Known {
		out.Unknown = e.whyUnknown(a.Expr)
	}
	return val, out
}

func (e *evaluator) text(rng hcl.Range) string {
	src := e.sources[rng.Filename]
	if rng.End.Byte > len(src) || rng.Start.Byte > rng.End.Byte {
		return ""
	}
	return string(src[rng.Start.Byte:rng.End.Byte])
}
