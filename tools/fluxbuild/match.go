package main

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/workload"
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
//	{"podRequests": {"template": PodTemplateSpec, "related": [LimitRange or RuntimeClass]}}
//	    -> {"requests": {name: quantity}, "error": ""}   what Kueue charges one pod of the template (podRequests)
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
	PodRequests *struct {
		Template json.RawMessage          `json:"template"` // decoded here: one that does not decode is this answer's error only
		Related  []map[string]interface{} `json:"related"`  // the namespace's LimitRanges, the cluster's RuntimeClasses
	} `json:"podRequests,omitempty"`
}

type answer struct {
	Taint    *v1.Taint         `json:"taint,omitempty"`
	Match    bool              `json:"match"`
	Error    string            `json:"error,omitempty"`
	Requests map[string]string `json:"requests,omitempty"`
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
	case q.PodRequests != nil:
		return podRequests(q.PodRequests.Template, q.PodRequests.Related)
	}
	return answer{Error: "empty query"}
}

// podRequests is what the pinned Kueue charges a ClusterQueue for one pod of a pod set built from the
// template: the Workload's requests as workload.NewInfo computes them (resourcehelpers.PodRequests: the
// larger of the biggest init container and the containers plus sidecars), after the job reconciler's
// workload.AdjustResources with `related`: the pod overhead of the RuntimeClass the pod names (handlePodOverhead; a
// RuntimeClass not among them adds none: object-ref reports it), the defaults of the namespace's LimitRanges, then limits
// standing in for missing requests.
func podRequests(raw json.RawMessage, related []map[string]interface{}) answer {
	var template v1.PodTemplateSpec
	if err := json.Unmarshal(raw, &template); err != nil {
		return answer{Error: err.Error()}
	}
	cluster, err := clusterWith(related)
	if err != nil {
		return answer{Error: err.Error()}
	}
	wl := &kueue.Workload{Spec: kueue.WorkloadSpec{PodSets: []kueue.PodSet{{Name: kueue.DefaultPodSetName, Count: 1, Template: template}}}}
	for _, lr := range related { // the Workload lives in the namespace whose LimitRanges these are
		if lr["kind"] == "LimitRange" {
			wl.Namespace, _, _ = unstructured.NestedString(lr, "metadata", "namespace")
		}
	}
	workload.AdjustResources(context.Background(), cluster, wl)
	requests := map[string]string{}
	for name, quantity := range workload.NewInfo(wl).TotalRequests[0].Requests.ToResourceList() {
		requests[string(name)] = quantity.String()
	}
	return answer{Match: true, Requests: requests}
}
