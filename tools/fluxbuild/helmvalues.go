package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/fluxcd/pkg/apis/meta"
	fluxchartutil "github.com/fluxcd/pkg/chartutil"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// composedValues is a HelmRelease's values as helm-controller composes them before it renders the chart
// (helmrelease_controller.go: chartutil.ChartValuesFromReferences on the HelmRelease's namespace, its spec.valuesFrom
// in order, then spec.values over them): fluxcd/pkg/chartutil's own function, with a client that holds the
// ConfigMaps and Secrets of the cluster's rendered set (`sources`) as the apiserver would store them. A reference it
// cannot resolve (a missing object or key not marked optional, values that are no YAML) is its error, as the
// controller's ValuesError condition says it.
func composedValues(namespace string, values map[string]interface{}, refs []meta.ValuesReference,
	sources []map[string]interface{}) (map[string]interface{}, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	objects := make([]client.Object, 0, len(sources))
	for _, src := range sources {
		u := &unstructured.Unstructured{Object: src}
		var typed client.Object
		switch u.GetKind() {
		case "ConfigMap":
			typed = &corev1.ConfigMap{}
		case "Secret":
			typed = &corev1.Secret{}
		default:
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(src, typed); err != nil {
			return nil, fmt.Errorf("%s %s/%s does not decode: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
		objects = append(objects, typed)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).Build()
	composed, err := fluxchartutil.ChartValuesFromReferences(context.Background(), logr.Discard(), c, namespace, values, refs...)
	if err != nil {
		return nil, err
	}
	return composed, nil
}

// valuesRef names the valuesFrom entry whose data helm-controller cannot use.
type valuesRef struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	Key  string `json:"key"`
}

// dataError is the reference of a ValuesError about a referenced object's data (its values do not parse, a targetPath
// value does not merge), nil for a missing object or key.
func dataError(err error) *valuesRef {
	var ref *fluxchartutil.ErrValuesReference
	if !errors.As(err, &ref) || errors.Is(ref.Reason, fluxchartutil.ErrResourceNotFound) || errors.Is(ref.Reason, fluxchartutil.ErrKeyNotFound) {
		return nil
	}
	return &valuesRef{Kind: ref.Kind, Name: ref.Name.Name, Key: ref.Key}
}
