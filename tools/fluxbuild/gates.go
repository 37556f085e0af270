package main

import (
	"maps"
	"sort"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
)

// managerRef names the operators a request's objects meet: the Kueue manager's configuration text (null: the
// chart's own) and the feature gates its Helm values pass as --feature-gates (controllerManager.featureGates), and
// those the KubeRay operator's values pass (featureGates).
type managerRef struct {
	Config       *string         `json:"config"`
	Gates        map[string]bool `json:"gates"`
	KubeRayGates map[string]bool `json:"kuberay_gates"`
}

// Kueue reads its feature gates from the process-wide gate (features.Enabled), as the manager does after
// cmd/kueue set them from --feature-gates and the configuration's featureGates. A request that runs Kueue's
// code runs under the gates of the manager it names: requests under the same gates run together, one under
// other gates waits for them to finish. Gates a manager does not set keep the pinned Kueue's defaults.
var gates = struct {
	sync.Mutex
	changed  *sync.Cond
	key      string // the gates in force, "" for the defaults
	running  int    // requests running under them
	defaults map[string]bool
}{}

func init() {
	gates.changed = sync.NewCond(&gates.Mutex)
}

// managerGates: what the operators run with beyond the defaults, nil when they start with none set (an operator
// that refuses its gates or configuration exits, which kueue-config and kuberay-feature-gates report: its gates then
// matter to nothing).
func managerGates(m *managerRef) map[string]bool {
	if m == nil {
		return nil
	}
	var out map[string]bool
	if operatorGateProblems(kueueOperator, "", m.Gates) == nil { // else the manager refuses its flag and exits (kueue-config)
		out = maps.Clone(m.Gates)
	}
	if m.Config != nil {
		if problems, cfg := kueueConfig(*m.Config, ""); len(problems) == 0 && cfg != nil && len(cfg.FeatureGates) > 0 {
			if out == nil {
				out = map[string]bool{}
			}
			maps.Copy(out, cfg.FeatureGates)
		}
	}
	if len(m.KubeRayGates) > 0 && operatorGateProblems(kuberayOperator, "", m.KubeRayGates) == nil { // else it exits (kuberay-feature-gates)
		if out == nil {
			out = map[string]bool{}
		}
		maps.Copy(out, m.KubeRayGates)
	}
	return out
}

func gatesKey(m map[string]bool) string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if v {
			keys = append(keys, k+"=true")
		} else {
			keys = append(keys, k+"=false")
		}
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

// underGates runs fn with the process-wide feature gates set as the manager `m` sets them.
func underGates(m *managerRef, fn func()) {
	want := managerGates(m)
	key := gatesKey(want)
	gates.Lock()
	for gates.running > 0 && gates.key != key {
		gates.changed.Wait()
	}
	if gates.key != key {
		setGates(want)
		gates.key = key
	}
	gates.running++
	gates.Unlock()
	defer func() {
		gates.Lock()
		gates.running--
		gates.changed.Broadcast()
		gates.Unlock()
	}()
	fn()
}

// setGates puts every gate the defaults or `want` name at its value in `want`, else its default. A value the gate
// refuses (an unknown or locked feature) leaves the defaults in force: Kueue's manager refuses it at start too.
func setGates(want map[string]bool) {
	gate := utilfeature.DefaultMutableFeatureGate
	if gates.defaults == nil {
		gates.defaults = map[string]bool{}
		for f := range gate.GetAll() {
			gates.defaults[string(f)] = gate.Enabled(f)
		}
	}
	target := map[string]bool{}
	for f, v := range want {
		target[f] = v
	}
	for f, v := range gates.defaults {
		if _, set := target[f]; !set && gate.Enabled(featuregate.Feature(f)) != v {
			target[f] = v
		}
	}
	// Tried on a copy first: a refused map can leave its values behind in the gate it was set on, and every later
	// DeepCopy (kueueConfig's) would refuse them again.
	if err := setQuietly(gate.DeepCopy(), target); err != nil {
		target = map[string]bool{}
		for f, v := range gates.defaults {
			if gate.Enabled(featuregate.Feature(f)) != v {
				target[f] = v
			}
		}
	}
	_ = setQuietly(gate, target)
}

// setQuietly sets gates without the warnings the gate logs for GA and deprecated features (the manager logs them).
func setQuietly(gate featuregate.MutableFeatureGate, m map[string]bool) error {
	if quiet, ok := gate.(interface {
		SetFromMapWithLogger(logr.Logger, map[string]bool) error
	}); ok {
		return quiet.SetFromMapWithLogger(logr.Discard(), m)
	}
	return gate.SetFromMap(m)
}
