package main

// The feature gates of each operator. Kueue and KubeRay register theirs on the same process-wide gate
// (k8s.io/apiserver's utilfeature), so in this process each also knows the other's names; their own
// processes do not. Each operator's own LogFeatureGates lists exactly the gates it registers, which tells
// them apart without a list kept here.

import (
	"fmt"
	"sort"
	"sync"

	"github.com/go-logr/logr"
	kuberayfeatures "github.com/ray-project/kuberay/ray-operator/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/featuregate"
	kueuefeatures "sigs.k8s.io/kueue/pkg/features"
)

const (
	kueueOperator   = "kueue"
	kuberayOperator = "kuberay"
)

// operatorFeatures: per operator, the feature gates it registers, each with its default (main reads them before
// any request sets a gate).
var operatorFeatures = sync.OnceValue(func() map[string]map[string]bool {
	listed := func(logFeatureGates func(logr.Logger)) map[string]bool {
		sink := &gateSink{}
		logFeatureGates(logr.New(sink))
		return sink.gates
	}
	return map[string]map[string]bool{
		kueueOperator:   listed(kueuefeatures.LogFeatureGates),
		kuberayOperator: listed(kuberayfeatures.LogFeatureGates),
	}
})

// foreignGates: the names of `gates` that another operator registers and `operator` does not, sorted. Its own
// process does not know them: setting one fails there with "unrecognized feature gate".
func foreignGates(operator string, gates map[string]bool) []string {
	own := operatorFeatures()[operator]
	var out []string
	for name := range gates {
		for other, names := range operatorFeatures() {
			_, theirs := names[name]
			if _, mine := own[name]; other != operator && theirs && !mine {
				out = append(out, name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// gatesOfFlags reads a --feature-gates value as the operators' flag does (component-base's MapStringBool).
func gatesOfFlags(flags string) (map[string]bool, error) {
	gates := map[string]bool{}
	if flags == "" {
		return gates, nil
	}
	err := cliflag.NewMapStringBool(&gates).Set(flags)
	return gates, err
}

// operatorFlagProblems is what `operator` does with its --feature-gates value at start (KubeRay's main sets it on
// the process-wide gate and exits when that fails; cmd/kueue the same): nil when it starts.
func operatorFlagProblems(operator, flags string) []configProblem {
	gates, err := gatesOfFlags(flags)
	if err != nil {
		return []configProblem{{Field: "--feature-gates", Detail: err.Error()}}
	}
	return operatorGateProblems(operator, "--feature-gates", gates)
}

// operatorGateProblems: why `operator` refuses to start with `gates` set (`field`: where they are written), nil when
// it starts. Tried on a copy: the checks' gates stay as they are.
func operatorGateProblems(operator, field string, gates map[string]bool) []configProblem {
	err := utilfeature.DefaultMutableFeatureGate.DeepCopy().SetFromMap(gates)
	if err == nil {
		if foreign := foreignGates(operator, gates); len(foreign) > 0 {
			err = fmt.Errorf("unrecognized feature gate: %s", foreign[0]) // the gate's own words for a name it does not know
		}
	}
	if err != nil {
		return []configProblem{{Field: field, Detail: err.Error()}}
	}
	return nil
}

// gateSink is a logr sink that keeps the "featureGates" value of what it is given (LogFeatureGates logs one).
type gateSink struct{ gates map[string]bool }

func (s *gateSink) Init(logr.RuntimeInfo)  {}
func (s *gateSink) Enabled(level int) bool { return true }
func (s *gateSink) Info(_ int, _ string, keysAndValues ...interface{}) {
	for i := 0; i+1 < len(keysAndValues); i += 2 {
		if gates, ok := keysAndValues[i+1].(map[featuregate.Feature]bool); ok && keysAndValues[i] == "featureGates" {
			s.gates = map[string]bool{}
			for f, on := range gates {
				s.gates[string(f)] = on
			}
		}
	}
}
func (s *gateSink) Error(error, string, ...interface{})    {}
func (s *gateSink) WithValues(...interface{}) logr.LogSink { return s }
func (s *gateSink) WithName(string) logr.LogSink           { return s }
