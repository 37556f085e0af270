package main

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/fluxcd/pkg/apis/meta"
	chartcommon "helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartv2util "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"sigs.k8s.io/yaml"
)

// helmRequest is op helm: a chart directory (the pinned chart, copied into the schema directory) rendered
// with a HelmRelease's values as helm-controller's Helm renders it on install.
type helmRequest struct {
	Chart     string                 `json:"chart"`
	Values    map[string]interface{} `json:"values"`
	Release   string                 `json:"release"`
	Namespace string                 `json:"namespace"`
	// The HelmRelease's spec.valuesFrom, its namespace, and the ConfigMaps and Secrets of that namespace in the
	// cluster's rendered set (composedValues).
	ValuesFrom      []meta.ValuesReference   `json:"valuesFrom,omitempty"`
	SourceNamespace string                   `json:"sourceNamespace,omitempty"`
	Sources         []map[string]interface{} `json:"sources,omitempty"`
	// The HelmRelease's spec.postRenderers and spec.postRenderStrategy (postrender.go).
	PostRenderers      []postRenderer `json:"postRenderers,omitempty"`
	PostRenderStrategy string         `json:"postRenderStrategy,omitempty"`
}

// helmObject is one object of the release's manifest, with the template it came from.
type helmObject struct {
	Template string                 `json:"template"`
	Object   map[string]interface{} `json:"object"`
}

// helmAnswer: the reason Helm refuses to install (a values schema, a template or a manifest that is no
// Kubernetes object), else the objects it would send to the apiserver, hooks included.
type helmAnswer struct {
	Error   string       `json:"error,omitempty"`
	Version string       `json:"version"`
	Objects []helmObject `json:"objects"`
	// With valuesFrom: the values helm-controller renders with (Values), or why it cannot compose them (ValuesError).
	Values      map[string]interface{} `json:"values,omitempty"`
	ValuesError string                 `json:"valuesError,omitempty"`
	// For a ValuesError of a reference's data (not a missing object or key, which the gate's object-ref reports):
	// the reference's kind, name and key.
	ValuesRef *valuesRef `json:"valuesRef,omitempty"`
}

var charts sync.Map // directory -> *loadedChart

type loadedChart struct {
	once  sync.Once
	chart *chart.Chart
	err   error
}

// loadChart reads a chart directory once per process (harness/gate/schemas.py copies the pinned charts
// without their CRD templates, which take no values the gate checks).
func loadChart(dir string) (*chart.Chart, error) {
	entry, _ := charts.LoadOrStore(dir, &loadedChart{})
	c := entry.(*loadedChart)
	c.once.Do(func() {
		c.chart, c.err = loader.LoadDir(dir)
	})
	return c.chart, c.err
}

func helmRender(req helmRequest, kubernetesVersion string) (out helmAnswer) {
	ch, err := loadChart(req.Chart)
	if err != nil {
		failRequest("loading the chart %s: %v", req.Chart, err)
	}
	out.Version = ch.Metadata.Version
	caps := chartcommon.DefaultCapabilities.Copy()
	if kubernetesVersion != "" { // the cluster's version, as helm-controller's Helm reads it from discovery
		kv, err := chartcommon.ParseKubeVersion(kubernetesVersion)
		if err != nil {
			failRequest("kubernetes_version %q: %v", kubernetesVersion, err)
		}
		caps.KubeVersion = *kv
	}
	if ch.Metadata.KubeVersion != "" && !chartv2util.IsCompatibleRange(ch.Metadata.KubeVersion, caps.KubeVersion.String()) {
		out.Error = fmt.Sprintf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", ch.Metadata.KubeVersion, caps.KubeVersion.Version)
		return out
	}
	given := req.Values
	if len(req.ValuesFrom) > 0 {
		composed, err := composedValues(req.SourceNamespace, req.Values, req.ValuesFrom, req.Sources)
		if err != nil {
			out.ValuesError, out.ValuesRef = err.Error(), dataError(err)
			return out
		}
		given, out.Values = composed, composed
	}
	if len(ch.Metadata.Dependencies) > 0 {
		// action.Install (and Upgrade) first drop the subcharts whose condition or tags the values turn off and import
		// their values (ProcessDependencies), e.g. the device plugin chart's node-feature-discovery, off unless
		// nfd.enabled or gfd.enabled. That changes the chart, so a chart with dependencies is read afresh per request.
		if ch, err = loader.LoadDir(req.Chart); err != nil {
			failRequest("loading the chart %s: %v", req.Chart, err)
		}
		if err := chartv2util.ProcessDependencies(ch, chartcommon.Values(given)); err != nil {
			out.Error = fmt.Sprintf("chart dependencies processing failed: %v", err)
			return out
		}
	}
	options := chartcommon.ReleaseOptions{Name: req.Release, Namespace: req.Namespace, Revision: 1, IsInstall: true}
	values, err := chartutil.ToRenderValuesWithSchemaValidation(ch, given, options, caps, false)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	files, err := engine.Engine{}.Render(ch, values)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	// Each template's output split into documents as Helm splits it (SortManifests, which also separates the hooks:
	// a hook is created too, so it is checked like the rest), each parsed once.
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if strings.HasPrefix(path.Base(name), "_") || strings.TrimSpace(files[name]) == "" {
			continue // partials and empty output, as SortManifests skips them
		}
		docs := releaseutil.SplitManifests(files[name])
		keys := make([]string, 0, len(docs))
		for k := range docs {
			keys = append(keys, k)
		}
		sort.Sort(releaseutil.BySplitManifestsOrder(keys))
		for _, key := range keys {
			obj := map[string]interface{}{}
			if err := yaml.Unmarshal([]byte(docs[key]), &obj); err != nil {
				out.Error = fmt.Sprintf("YAML parse error on %s: %v", name, err)
				return out
			}
			if len(obj) > 0 {
				out.Objects = append(out.Objects, helmObject{Template: strings.TrimPrefix(name, ch.Name()+"/"), Object: obj})
			}
		}
	}
	if len(req.PostRenderers) > 0 {
		if out.Objects, err = postRender(out.Objects, req.PostRenderers, req.PostRenderStrategy); err != nil {
			out.Error, out.Objects = err.Error(), nil
		}
	}
	return out
}
