package main

import (
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/yannh/kubeconform/pkg/resource"
	"github.com/yannh/kubeconform/pkg/validator"
)

// builtinValidator checks built-in kinds with kubeconform's validator, strictly, on the offline
// schemas (the same flags as harness/gate/schema_check.py kubeconform_args).
type builtinValidator struct{ v validator.Validator }

func newBuiltinValidator(schemaDir, k8sVersion string) (*builtinValidator, error) {
	location := filepath.Join(schemaDir, "{{ .ResourceKind }}{{ .KindSuffix }}.json")
	v, err := validator.New([]string{location}, validator.Opts{Strict: true, KubernetesVersion: k8sVersion})
	if err != nil {
		return nil, err
	}
	return &builtinValidator{v: v}, nil
}

func (b *builtinValidator) check(obj map[string]interface{}) checkResult {
	data, err := json.Marshal(obj)
	if err != nil {
		return checkResult{Stage: "schema", Errors: []fieldError{{Type: "InternalError", Detail: err.Error(), Message: err.Error()}}}
	}
	res := b.v.ValidateResource(resource.Resource{Path: "object.json", Bytes: data})
	switch res.Status {
	case validator.Valid:
		if errs := builtinMetadataErrors(obj); errs != nil {
			return checkResult{Stage: "validation", Errors: errs}
		}
		return checkResult{}
	case validator.Skipped, validator.Empty:
		return checkResult{}
	case validator.Invalid:
		var errs []fieldError
		for _, e := range res.ValidationErrors {
			path := strings.ReplaceAll(strings.TrimPrefix(e.Path, "/"), "/", ".")
			where := path
			if where == "" {
				where = "(the object)"
			}
			errs = append(errs, fieldError{Field: path, Type: "FieldValueInvalid", Detail: e.Msg, Message: where + ": " + e.Msg})
		}
		if len(errs) == 0 && res.Err != nil {
			errs = append(errs, fieldError{Type: "FieldValueInvalid", Detail: res.Err.Error(), Message: res.Err.Error()})
		}
		return checkResult{Stage: "schema", Errors: errs}
	default:
		msg := "validation error"
		if res.Err != nil {
			msg = res.Err.Error()
		}
		stage := "schema"
		if strings.Contains(msg, "could not find schema") {
			stage = "unknown"
		}
		return checkResult{Stage: stage, Errors: []fieldError{{Type: "FieldValueInvalid", Detail: msg, Message: msg}}}
	}
}
