package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	configv1beta1 "sigs.k8s.io/kueue/apis/config/v1beta1"
	configapi "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueueconfig "sigs.k8s.io/kueue/pkg/config"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	// Every integration the pinned Kueue manager registers, so that integrations.frameworks is judged
	// against the same list (cmd/kueue imports this package for the same reason).
	_ "sigs.k8s.io/kueue/pkg/controller/jobs"
)

// configProblem is one reason the pinned Kueue manager refuses its configuration and exits at start.
type configProblem struct {
	Field  string `json:"field,omitempty"`
	Detail string `json:"detail"`
}

// loadedConfig is the answer of op kueue-config: why the manager would refuse the text, else the
// configuration it runs with (Kueue's defaults filled in, as config.Load fills them).
type loadedConfig struct {
	Problems []configProblem          `json:"problems"`
	Config   *configapi.Configuration `json:"config,omitempty"`
	Defaults map[string]bool          `json:"defaults,omitempty"` // the pinned Kueue's feature gates, each at its default
}

func kueueConfigAnswer(text, flags string) loadedConfig {
	problems, cfg := kueueConfig(text, flags)
	if len(problems) > 0 {
		return loadedConfig{Problems: problems, Defaults: operatorFeatures()[kueueOperator]}
	}
	return loadedConfig{Problems: []configProblem{}, Config: cfg, Defaults: operatorFeatures()[kueueOperator]}
}

// kueueConfig runs what the pinned Kueue manager does with its --config file before it starts
// (cmd/kueue/main.go: config.Load, then config.ValidateFeatureGates and the feature gates set from
// the configuration's map), with Kueue's own functions. `flags`: the manager's --feature-gates value (the chart's
// controllerManager.featureGates), "" without. Problems: none when the manager starts.
func kueueConfig(text, flags string) ([]configProblem, *configapi.Configuration) {
	type loaded struct {
		problems []configProblem
		cfg      *configapi.Configuration
	}
	key := [2]string{text, flags}
	if l, ok := loadedConfigs.Load(key); ok { // the gates of each request and the admit request ask for the same text
		return l.(loaded).problems, l.(loaded).cfg
	}
	problems, cfg := loadKueueConfig(text, flags)
	loadedConfigs.Store(key, loaded{problems, cfg})
	return problems, cfg
}

var loadedConfigs sync.Map

func loadKueueConfig(text, flags string) ([]configProblem, *configapi.Configuration) {
	scheme := managerScheme()
	dir, err := os.MkdirTemp("", "kueue-config-")
	if err != nil {
		failRequest("%v", err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "controller_manager_config.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		failRequest("%v", err)
	}
	_, cfg, err := kueueconfig.Load(scheme, path)
	if err != nil {
		return problemsOf(err), nil
	}
	// cmd/kueue validates before it sets any gate: ValidateFeatureGates reads the TAS profile and elastic-job gates from
	// the process-wide gate at Kueue's defaults. Run it under the defaults, not under another request's gates.
	var errs field.ErrorList
	underGates(nil, func() { errs = kueueconfig.ValidateFeatureGates(flags, cfg.FeatureGates) })
	if len(errs) > 0 {
		return problemsOf(errs.ToAggregate()), nil
	}
	if flags != "" { // cmd/kueue sets --feature-gates on the process-wide gate: an unknown or locked gate fails it
		if problems := operatorFlagProblems(kueueOperator, flags); problems != nil {
			return problems, nil
		}
	}
	// Then the configuration's map, which fails the same way (a KubeRay gate is unknown to Kueue's process).
	if problems := operatorGateProblems(kueueOperator, "featureGates", cfg.FeatureGates); problems != nil {
		return problems, nil
	}
	return nil, &cfg
}

// managerScheme is what cmd/kueue's init registers that its configuration is decoded and judged with:
// both configuration versions, and the job types of the integrations (a framework listed twice).
var managerScheme = sync.OnceValue(func() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(configv1beta1.AddToScheme(scheme))
	utilruntime.Must(configapi.AddToScheme(scheme))
	utilruntime.Must(jobframework.ForEachIntegration(func(_ string, cb jobframework.IntegrationCallbacks) error {
		if cb.AddToScheme != nil {
			return cb.AddToScheme(scheme)
		}
		return nil
	}))
	return scheme
})

// problemsOf splits Kueue's aggregated field errors into one problem each (a decoding error is one).
func problemsOf(err error) []configProblem {
	var out []configProblem
	if agg, ok := err.(interface{ Errors() []error }); ok {
		for _, e := range agg.Errors() {
			if fe, ok := e.(*field.Error); ok {
				out = append(out, configProblem{Field: fe.Field, Detail: fe.ErrorBody()})
				continue
			}
			out = append(out, configProblem{Detail: e.Error()})
		}
		return out
	}
	return []configProblem{{Detail: strings.TrimSpace(err.Error())}}
}
