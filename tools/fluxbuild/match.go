package main

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// Placement and selector questions the gate's capacity and admission rules ask, answered with
// the functions kube-scheduler's TaintToleration and NodeAffinity plugins, Kueue's flavor
// assigner and the apiserver's label selectors use (component-helpers, apimachinery).
//
// A "match" request's "queries" are answered with one answer each, in order:
//
//	{"untolerated": {"taints": [Taint], "tolerations": [Toleration], "comparison": bool}}
//	    -> {"taint": Taint or null}   the first NoSchedule/NoExecute taint nothing tolerates
//	{"node": {"labels": {...}, "pod": PodSpec (nodeSelector, affinity)}}
//	    -> {"match": bool, "error": ""}   nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)
//	{"selector": {"selector": LabelSelector, "labels": {...}}}
//	    -> {"match": bool, "error": ""}   metav1.LabelSelectorAsSelector(...).Matches(labels)
type query struct {
	Untolerated *struct {
		Taints      []v1.Taint      `json:"taints"`
		Tolerations []v1.Toleration `json:"tolerations"`
		Comparison  bool            `json:"comparison"`
	} `json:"untolerated,omitempty"`
	Node *struct {
		Labels map[string]string `json:"labels"`
		Pod    v1.PodSpec        `json:"pod"`
	} `json:"node,omitempty"`
	Selector *struct {
		Selector *metav1.LabelSelector `json:"selector"`
		Labels   map[string]string     `json:"labels"`
	} `json:"selector,omitempty"`
}

type answer struct {
	Taint *v1.Taint `json:"taint,omitempty"`
	Match bool      `json:"match"`
	Error string    `json:"error,omitempty"`
}

func blocking(t *v1.Taint) bool {
	return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
}

func answerQuery(q query) answer {
	logger := klog.Background()
	switch {
	case q.Untolerated != nil:
		taint, found := corev1helpers.FindMatchingUntoleratedTaint(logger, q.Untolerated.Taints, q.Untolerated.Tolerations, blocking, q.Untolerated.Comparison)
		if found {
			return answer{Taint: &taint}
		}
		return answer{Match: true}
	case q.Node != nil:
		pod := &v1.Pod{Spec: q.Node.Pod}
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: q.Node.Labels}}
		ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)
		if err != nil {
			return answer{Error: err.Error()}
		}
		return answer{Match: ok}
	case q.Selector != nil:
		sel, err := metav1.LabelSelectorAsSelector(q.Selector.Selector)
		if err != nil {
			return answer{Error: err.Error()}
		}
		return answer{Match: sel.Matches(labels.Set(q.Selector.Labels))}
	}
	return answer{Error: "empty query"}
}
