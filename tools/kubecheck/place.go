package main

// The `place` op: kube-scheduler's own framework, with the default profile of the pinned Kubernetes
// (its filter and score plugins: NodeResourcesFit, NodeAffinity, TaintToleration, NodePorts,
// InterPodAffinity, PodTopologySpread, ...), places a job's pods (a Ray object's, as KubeRay builds them, or a
// plain workload's: a Deployment's replicas, workload.go) one after another on simulated nodes,
// as the scheduler would on an otherwise empty cluster: each pod goes to the feasible node its score
// plugins rank first and then counts for the next (its resources, its labels for (anti-)affinity and
// spread). What it leaves unplaced would stay Pending on the cluster while Kueue holds the job's quota.
//
// The pods get their namespace's LimitRange defaults first, as the LimitRanger admission gives them, and their
// RuntimeClass's overhead and scheduling, as the RuntimeClass admission sets them (NodeResourcesFit counts the overhead). Not
// simulated: other workloads, preemption, the cluster autoscaler's choice among pools (an autoscaling pool is
// given at its max_count) and the plugins that need cluster state the gate does not have (volumes, dynamic
// resources); their objects are checked by the gate's own rules.

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	fwk "k8s.io/kube-scheduler/framework"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1defaults "k8s.io/kubernetes/pkg/apis/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
)

// podSetAssign is what Kueue adds to a pod set's pods when it admits the job with its flavors.
type podSetAssign struct {
	NodeSelector map[string]string   `json:"nodeSelector"`
	Tolerations  []corev1.Toleration `json:"tolerations"`
}

// unplaced is one pod set with pods the scheduler finds no node for, and its reason for the first of them.
type unplaced struct {
	Role     string `json:"role"`
	Template string `json:"template"`
	Pods     int    `json:"pods"`
	Of       int    `json:"of"`
	Message  string `json:"message"`
}

// Plugins whose state the gate does not have (PVCs, CSI drivers, resource claims) and those after placement.
var notSimulated = []string{names.VolumeBinding, names.VolumeRestrictions, names.VolumeZone, names.NodeVolumeLimits,
	names.DynamicResources, names.DefaultPreemption}

// liveLister is the framework's view of the cluster: a snapshot replaced as pods are placed.
type liveLister struct{ snapshot *cache.Snapshot }

func (l *liveLister) NodeInfos() fwk.NodeInfoLister       { return l.snapshot.NodeInfos() }
func (l *liveLister) StorageInfos() fwk.StorageInfoLister { return l.snapshot.StorageInfos() }

func newScheduler(ctx context.Context, lister *liveLister) (framework.Framework, error) {
	schedmetrics.Register() // the framework counts into them (once per process)
	cfg, err := latest.Default()
	if err != nil {
		return nil, err
	}
	profile := cfg.Profiles[0]
	var enabled []config.Plugin
	for _, p := range profile.Plugins.MultiPoint.Enabled {
		if !slices.Contains(notSimulated, p.Name) {
			enabled = append(enabled, p)
		}
	}
	profile.Plugins.MultiPoint.Enabled = enabled
	// Never started: its listers are empty, as an empty cluster's would be (no namespaces by label for affinity).
	client := kubernetes.NewForConfigOrDie(&rest.Config{Host: "https://gate.invalid"})
	return frameworkruntime.NewFramework(ctx, plugins.NewInTreeRegistry(), &profile,
		frameworkruntime.WithClientSet(client), frameworkruntime.WithInformerFactory(informers.NewSharedInformerFactory(client, 0)),
		frameworkruntime.WithSnapshotSharedLister(lister))
}

// placeAll places each object of a `place` request with its own assignments and namespace objects.
func placeAll(req request) ([][]unplaced, error) {
	answers := make([][]unplaced, len(req.Objects))
	for i, obj := range req.Objects {
		var assign map[string]podSetAssign
		if i < len(req.Assign) {
			assign = req.Assign[i]
		}
		var related []map[string]interface{}
		if i < len(req.Related) {
			related = req.Related[i]
		}
		found, err := place(obj, req.Nodes, assign, related)
		if err != nil {
			return nil, err
		}
		answers[i] = append([]unplaced{}, found...) // [] rather than null for a job placed in full
	}
	return answers, nil
}

func place(obj map[string]interface{}, cluster []corev1.Node, assign map[string]podSetAssign, related []map[string]interface{}) (out []unplaced, err error) {
	defer func() {
		// Pods the apiserver would refuse can trip the plugins: the caller reports this only beside no such refusal.
		if p := recover(); p != nil {
			out = []unplaced{{Message: fmt.Sprintf("kube-scheduler's framework fails on these pods: %v", p)}}
		}
	}()
	ctx := context.Background()
	nodes := make([]*corev1.Node, len(cluster))
	for i := range cluster {
		nodes[i] = &cluster[i]
	}
	ns, err := namespaceOf(related)
	if err != nil {
		return nil, nil // the LimitRange's own check reports it
	}
	lister := &liveLister{cache.NewSnapshot(nil, nodes)}
	sched, err := newScheduler(ctx, lister)
	if err != nil {
		return nil, err
	}
	var placed []*corev1.Pod
	for _, b := range append(podsOf(obj), templatePods(obj)...) {
		set := unplaced{Role: b.role, Template: b.template, Of: b.count}
		for i := 0; i < b.count; i++ {
			pod := b.pod.DeepCopy()
			pod.Name = fmt.Sprintf("%s%d", pod.GenerateName, i)
			pod.UID = types.UID(fmt.Sprintf("%s/%s", b.role, pod.Name))
			corev1defaults.SetObjectDefaults_Pod(pod) // requests from limits, as the apiserver defaults them
			pod = ns.defaulted(pod)
			a := assign[b.role]
			for k, v := range a.NodeSelector {
				if pod.Spec.NodeSelector == nil {
					pod.Spec.NodeSelector = map[string]string{}
				}
				pod.Spec.NodeSelector[k] = v
			}
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, a.Tolerations...)
			if pod.Spec.SchedulerName != corev1.DefaultSchedulerName {
				// Only kube-scheduler runs on AKS (as default-scheduler): a pod for another scheduler is never bound.
				if set.Pods++; set.Message == "" {
					set.Message = fmt.Sprintf("schedulerName %q: no such scheduler runs on the cluster (AKS runs kube-scheduler as %q), "+
						"so nothing ever binds the pod", pod.Spec.SchedulerName, corev1.DefaultSchedulerName)
				}
				continue
			}
			node, why := scheduleOne(ctx, sched, lister, pod)
			if node == "" {
				if set.Pods++; set.Message == "" {
					set.Message = why
				}
				continue
			}
			pod.Spec.NodeName = node
			placed = append(placed, pod)
			lister.snapshot = cache.NewSnapshot(placed, nodes)
		}
		if set.Pods > 0 {
			out = append(out, set)
		}
	}
	return out, nil
}

// scheduleOne is one scheduling cycle of kube-scheduler (schedule_one.go: PreFilter, Filter on every node,
// PreScore and Score on the feasible ones, the highest total wins): the node, or the scheduler's own
// "0/N nodes are available: ..." message.
func scheduleOne(ctx context.Context, sched framework.Framework, lister *liveLister, pod *corev1.Pod) (string, string) {
	state := framework.NewCycleState()
	all, err := lister.NodeInfos().List()
	if err != nil {
		return "", err.Error()
	}
	diagnosis := framework.Diagnosis{NodeToStatus: framework.NewDefaultNodeToStatus()}
	fitError := func() string {
		return (&framework.FitError{Pod: pod, NumAllNodes: len(all), Diagnosis: diagnosis}).Error()
	}
	pre, status, _ := sched.RunPreFilterPlugins(ctx, state, pod)
	if !status.IsSuccess() {
		if !status.IsRejected() {
			return "", status.AsError().Error()
		}
		diagnosis.NodeToStatus.SetAbsentNodesStatus(status)
		diagnosis.PreFilterMsg = status.Message()
		diagnosis.AddPluginStatus(status)
		return "", fitError()
	}
	var feasible []fwk.NodeInfo
	for _, info := range all {
		name := info.Node().Name
		if !pre.AllNodes() && !pre.NodeNames.Has(name) {
			diagnosis.NodeToStatus.Set(name, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) didn't satisfy the pod's prefilter"))
			continue
		}
		if s := sched.RunFilterPlugins(ctx, state, pod, info); s.IsSuccess() {
			feasible = append(feasible, info)
		} else {
			diagnosis.NodeToStatus.Set(name, s)
			diagnosis.AddPluginStatus(s)
		}
	}
	if len(feasible) == 0 {
		return "", fitError()
	}
	if len(feasible) == 1 {
		return feasible[0].Node().Name, ""
	}
	if s := sched.RunPreScorePlugins(ctx, state, pod, feasible); !s.IsSuccess() && !s.IsSkip() {
		return "", s.AsError().Error()
	}
	scores, s := sched.RunScorePlugins(ctx, state, pod, feasible)
	if !s.IsSuccess() {
		return "", s.AsError().Error()
	}
	best := 0
	for i := range scores { // the scheduler breaks ties at random; the first node keeps runs repeatable
		if scores[i].TotalScore > scores[best].TotalScore {
			best = i
		}
	}
	return scores[best].Name, ""
}

// defaulted is the pod as the mutating admission leaves it before the scheduler sees it: its namespace's LimitRange
// defaults (a container without requests gets the defaultRequest), its RuntimeClass's overhead and scheduling. A pod
// the admission refuses is returned as it is: the pod check reports the refusal.
func (ns namespaceObjects) defaulted(pod *corev1.Pod) *corev1.Pod {
	internal := &api.Pod{}
	if corev1defaults.Convert_v1_Pod_To_core_Pod(pod, internal, nil) != nil || ns.admitted(internal) != nil {
		return pod
	}
	out := &corev1.Pod{}
	if corev1defaults.Convert_core_Pod_To_v1_Pod(internal, out, nil) != nil {
		return pod
	}
	return out
}
