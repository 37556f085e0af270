package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// crdVersion is one served version of a CRD; its schema, validators and REST strategy are
// built on first use, as the apiserver builds them when it starts serving the CRD.
type crdVersion struct {
	source *crdSource
	set    *crdSet // the CRDs it belongs to (a RayJob's check validates the Workload Kueue makes of it)
	name   string
	once   sync.Once
	err    error

	crd        *apiextensionsv1.CustomResourceDefinition
	version    apiextensionsv1.CustomResourceDefinitionVersion
	structural *structuralschema.Structural
	strategy   rest.RESTCreateStrategy
}

// crdSource is one served version of a CRD of the schema directory's crds/ (the CRD with only that version), read and
// decoded only when it is used: the typed decoding of a CRD's schema is most of what building its validator costs.
type crdSource struct {
	path string
	once sync.Once
	crd  *apiextensionsv1.CustomResourceDefinition
	err  error
}

func (s *crdSource) decode() (*apiextensionsv1.CustomResourceDefinition, error) {
	s.once.Do(func() {
		data, err := os.ReadFile(s.path)
		if err != nil {
			s.err = err
			return
		}
		s.crd = &apiextensionsv1.CustomResourceDefinition{}
		s.err = json.Unmarshal(data, s.crd)
	})
	return s.crd, s.err
}

// crdEntry is one line of crds/index.json (harness/gate/schemas.py): what loading needs of a CRD.
type crdEntry struct {
	Group  string            `json:"group"`
	Kind   string            `json:"kind"`
	Served []string          `json:"served"`
	Files  map[string]string `json:"files"` // served version -> its file
}

type crdSet struct {
	byGVK  map[schema.GroupVersionKind]*crdVersion
	served map[schema.GroupKind][]string // served versions per kind
	groups map[string]bool
}

func loadCRDs(dir string) (*crdSet, error) {
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return nil, fmt.Errorf("reading CRDs: %v", err)
	}
	var entries []crdEntry
	if err := json.Unmarshal(data, &entries); err != nil {
		return nil, fmt.Errorf("reading CRDs from %s: %v", dir, err)
	}
	set := &crdSet{byGVK: map[schema.GroupVersionKind]*crdVersion{}, served: map[schema.GroupKind][]string{}, groups: map[string]bool{}}
	for _, e := range entries {
		set.groups[e.Group] = true
		gk := schema.GroupKind{Group: e.Group, Kind: e.Kind}
		for _, v := range e.Served {
			set.served[gk] = append(set.served[gk], v)
			set.byGVK[gk.WithVersion(v)] = &crdVersion{source: &crdSource{path: filepath.Join(dir, e.Files[v])}, set: set, name: v}
		}
	}
	return set, nil
}

// prepare builds the validators of the expected kinds ahead of the objects, one after another
// (on two cores the caller's renderer needs the other one).
func (s *crdSet) prepare(kinds [][2]string) {
	for _, k := range kinds {
		if c := s.byGVK[schema.FromAPIVersionAndKind(k[0], k[1])]; c != nil {
			c.build() // an error is reported when an object of the kind is checked
		}
	}
}

func gvkOf(obj map[string]interface{}) schema.GroupVersionKind {
	u := unstructured.Unstructured{Object: obj}
	return u.GroupVersionKind()
}

func (s *crdSet) lookup(obj map[string]interface{}) *crdVersion {
	return s.byGVK[gvkOf(obj)]
}

// knowsGroup: the object is in a CRD group of the pinned operators but its version or kind is
// not served (e.g. kueue.x-k8s.io/v1): the apiserver answers "no matches for kind".
func (s *crdSet) knowsGroup(obj map[string]interface{}) bool {
	return s.groups[gvkOf(obj).Group]
}

func (s *crdSet) servedText(obj map[string]interface{}) string {
	gvk := gvkOf(obj)
	versions := s.served[gvk.GroupKind()]
	if len(versions) == 0 {
		var kinds []string
		for gk := range s.served {
			if gk.Group == gvk.Group {
				kinds = append(kinds, gk.Kind)
			}
		}
		sort.Strings(kinds)
		return fmt.Sprintf("no kind %q in group %s (served kinds: %s)", gvk.Kind, gvk.Group, strings.Join(kinds, ", "))
	}
	return fmt.Sprintf("%s %s is not served (served versions: %s)", gvk.GroupVersion(), gvk.Kind, strings.Join(versions, ", "))
}

// typer answers ObjectKinds for unstructured objects, which is all BeforeCreate asks of it.
type typer struct{}

func (typer) ObjectKinds(obj runtime.Object) ([]schema.GroupVersionKind, bool, error) {
	return []schema.GroupVersionKind{obj.GetObjectKind().GroupVersionKind()}, false, nil
}
func (typer) Recognizes(schema.GroupVersionKind) bool { return true }

func (c *crdVersion) build() error {
	c.once.Do(func() {
		if c.crd, c.err = c.source.decode(); c.err != nil {
			c.err = fmt.Errorf("reading CRD: %v", c.err)
			return
		}
		for _, v := range c.crd.Spec.Versions {
			if v.Name == c.name {
				c.version = v
			}
		}
		internal := &apiextensionsinternal.CustomResourceValidation{}
		if c.version.Schema == nil {
			c.err = fmt.Errorf("CRD %s version %s has no schema", c.crd.Name, c.version.Name)
			return
		}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(c.version.Schema, internal, nil); err != nil {
			c.err = err
			return
		}
		s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
		if err != nil {
			c.err = fmt.Errorf("CRD %s: not a structural schema: %v", c.crd.Name, err)
			return
		}
		s = s.DeepCopy()
		if err := structuraldefaulting.PruneDefaults(s); err != nil {
			c.err = err
			return
		}
		validator, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
		if err != nil {
			c.err = err
			return
		}
		// No status validator: the apiserver uses it only on updates of the status subresource
		// (ValidateStatusUpdate), never on create.
		var status *apiextensionsinternal.CustomResourceSubresourceStatus
		if c.version.Subresources != nil && c.version.Subresources.Status != nil {
			status = &apiextensionsinternal.CustomResourceSubresourceStatus{}
		}
		kind := schema.GroupVersionKind{Group: c.crd.Spec.Group, Version: c.version.Name, Kind: c.crd.Spec.Names.Kind}
		c.structural = s
		c.strategy = customresource.NewStrategy(typer{}, c.crd.Spec.Scope == apiextensionsv1.NamespaceScoped, kind,
			validator, nil, s, status, nil, c.version.SelectableFields)
	})
	return c.err
}

// check runs an object through the apiserver's create path for this CRD (with Kueue's mutating webhook
// for RayJobs before the validation), then Kueue's validating webhook, then what KubeRay's controllers
// validate before they act on a Ray object, then what Kueue's scheduler checks of a RayJob's Workload
// before it looks for quota, then whether Kueue charges the pods KubeRay creates (accounting.go).
func (c *crdVersion) check(ctx context.Context, obj map[string]interface{}, related []map[string]interface{}) checkResult {
	if err := c.build(); err != nil {
		failRequest("%v", err)
	}
	u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)}
	if unknown := c.decode(u); len(unknown) > 0 {
		var errs []fieldError
		for _, p := range unknown {
			msg := fmt.Sprintf("unknown field %q", p)
			errs = append(errs, fieldError{Field: p, Type: "FieldValueUnknown", Detail: msg, Message: "strict decoding error: " + msg})
		}
		return checkResult{Stage: "decode", Errors: errs}
	}
	structuraldefaulting.Default(u.Object, c.structural)
	ns := u.GetNamespace()
	if ns == "" && c.crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
		ns = "default" // what kubectl and Flux send when the object names none
		u.SetNamespace(ns)
	}
	kueueDefaults(ctx, u, related) // Kueue's mutating webhook runs before the apiserver's validation
	rest.FillObjectMetaSystemFields(u)
	if u.GetGenerateName() != "" && u.GetName() == "" { // the store names it before BeforeCreate, as kubectl create asks
		u.SetName(c.strategy.GenerateName(u.GetGenerateName()))
	}
	if err := rest.BeforeCreate(c.strategy, genericapirequest.WithNamespace(ctx, ns), u); err != nil {
		errs := statusErrors(err)
		for i, e := range errs { // the status keeps the bad value only in the message, quoted
			errs[i].Field = entryField(e.Field, u.GetLabels(), u.GetAnnotations(), func(k, v string) bool {
				return strings.Contains(e.Detail, strconv.Quote(v)) || strings.Contains(e.Detail, strconv.Quote(k))
			})
		}
		return checkResult{Stage: "validation", Errors: errs}
	}
	if errs := webhookErrors(ctx, u); len(errs) > 0 {
		return checkResult{Stage: "webhook", Errors: errs}
	}
	if errs := controllerErrors(u); len(errs) > 0 {
		return checkResult{Stage: "controller", Errors: errs}
	}
	if errs := schedulerErrors(ctx, c.set, u, related); len(errs) > 0 {
		return checkResult{Stage: "scheduler", Errors: errs}
	}
	if errs, idle := accountingErrors(ctx, u); len(errs) > 0 {
		return checkResult{Stage: "accounting", Errors: errs}
	} else if len(idle) > 0 {
		return checkResult{Stage: "idle-quota", Errors: idle}
	}
	return checkResult{}
}

// decode is the apiserver's unstructuredSchemaCoercer with strict field validation: the unknown
// field paths of metadata, of the schema (pruning) and of embedded ObjectMeta.
func (c *crdVersion) decode(u *unstructured.Unstructured) []string {
	var unknown []string
	_, _, metaUnknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u.Object, schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		return []string{err.Error()}
	}
	unknown = append(unknown, metaUnknown...)
	unknown = append(unknown, structuralpruning.PruneWithOptions(u.Object, c.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, c.structural)
	if ferr, paths := schemaobjectmeta.CoerceWithOptions(nil, u.Object, c.structural, false, schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true}); ferr != nil {
		unknown = append(unknown, ferr.Error())
	} else {
		unknown = append(unknown, paths...)
	}
	return unknown
}

// statusErrors flattens an apiserver Invalid status into its causes (field path and message).
func statusErrors(err error) []fieldError {
	var out []fieldError
	if status, ok := err.(apierrors.APIStatus); ok && status.Status().Details != nil {
		for _, cause := range status.Status().Details.Causes {
			out = append(out, fieldError{Field: cause.Field, Type: string(cause.Type), Detail: cause.Message,
				Message: fmt.Sprintf("%s: %s", cause.Field, cause.Message)})
		}
	}
	if len(out) == 0 {
		out = append(out, fieldError{Type: "InternalError", Detail: err.Error(), Message: err.Error()})
	}
	return out
}

func fieldErrors(list field.ErrorList) []fieldError {
	out := make([]fieldError, 0, len(list))
	for _, e := range list {
		out = append(out, fieldError{Field: e.Field, Type: string(e.Type), Detail: e.ErrorBody(), Message: e.Error()})
	}
	return out
}
