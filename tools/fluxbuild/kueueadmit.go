package main

import (
	"context"
	"fmt"
	"sort"

	"github.com/go-logr/logr"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilsets "k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	configapi "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/controller/jobs/raycluster"
	"sigs.k8s.io/kueue/pkg/controller/jobs/rayjob"
	"sigs.k8s.io/kueue/pkg/controller/jobs/rayservice"
	"sigs.k8s.io/kueue/pkg/resources"
	"sigs.k8s.io/kueue/pkg/scheduler/flavorassigner"
	"sigs.k8s.io/kueue/pkg/scheduler/preemption"
	"sigs.k8s.io/kueue/pkg/scheduler/preemption/fairsharing"
	"sigs.k8s.io/kueue/pkg/util/expectations"
	"sigs.k8s.io/kueue/pkg/workload"
)

// Op admit: could the pinned Kueue's scheduler ever admit a RayJob's, RayCluster's or RayService's Workload in its ClusterQueue? The
// cluster's ResourceFlavors, Topologies, AdmissionChecks (active), Cohorts and ClusterQueues (defaulted as the
// apiserver stores them) go into Kueue's own scheduler cache, with the cluster's Nodes for topology-aware flavors; the
// Workload is the one Kueue's Ray integration for its kind builds (the kind's PodSets, AdjustResources with the namespace's
// LimitRanges and the pod overhead of the cluster's RuntimeClasses), seen through the manager configuration's resource transformations and excluded
// prefixes (workload.NewInfo, as cmd/kueue configures its caches). Kueue's flavor assigner then assigns
// it on the cluster with nothing else admitted: the most it can ever get (nominal quota, borrowing
// through the cohort tree, one flavor per resource group and pod set, TAS-only flavors, the pods
// resource, flavor fungibility). Fit: it is admitted on an idle cluster; else it pends forever.

type admitRequest struct {
	Kueue  []map[string]interface{} `json:"kueue"`
	Config *string                  `json:"config"` // the manager configuration text; null: the chart's own (no transformations)
	Nodes  []map[string]interface{} `json:"nodes"`
	Jobs   []admitJob               `json:"jobs"`
}

type admitJob struct {
	Object       map[string]interface{}   `json:"object"`
	ClusterQueue string                   `json:"cluster_queue"`
	Related      []map[string]interface{} `json:"related"` // the LimitRanges of its namespace, the cluster's RuntimeClasses
}

type admitAnswer struct {
	Mode    string        `json:"mode"` // Fit, Preempt or NoFit (flavorassigner's modes); "" when not judged
	Message string        `json:"message"`
	Skipped string        `json:"skipped,omitempty"` // why it was not judged
	PodSets []admitPodSet `json:"pod_sets"`
}

type admitPodSet struct {
	Name     string            `json:"name"`
	Count    int32             `json:"count"`
	Requests map[string]string `json:"requests"` // all its pods together, per resource, as Kueue counts them
	Flavors  map[string]string `json:"flavors"`  // per resource, the flavor Kueue gives it
	Reasons  string            `json:"reasons,omitempty"`
}

func admitAnswers(s *schemaSet, req admitRequest) (answers []admitAnswer) {
	s.ready()
	ctx := context.Background()
	answers = make([]admitAnswer, len(req.Jobs))
	defer func() { // Kueue's cache failing on this cluster's queue objects leaves its samples unjudged, not the gate unable to run
		if r := recover(); r != nil {
			for i := range answers {
				answers[i] = admitAnswer{Skipped: fmt.Sprintf("Kueue's scheduler cache fails on the cluster's queue objects: %v", r)}
			}
		}
	}()
	var infoOptions []workload.InfoOption
	var cacheOptions []schdcache.Option
	var fairSharing *configapi.FairSharing
	if req.Config != nil {
		problems, cfg := kueueConfig(*req.Config, "")
		if len(problems) > 0 {
			for i := range answers {
				answers[i] = admitAnswer{Skipped: "the Kueue manager refuses its configuration (kueue-config)"}
			}
			return answers
		}
		if cfg.Resources != nil {
			// as cmd/kueue configures its caches and queues
			infoOptions = append(infoOptions, workload.WithExcludedResourcePrefixes(cfg.Resources.ExcludeResourcePrefixes),
				workload.WithResourceTransformations(cfg.Resources.Transformations))
			cacheOptions = append(cacheOptions, schdcache.WithExcludedResourcePrefixes(cfg.Resources.ExcludeResourcePrefixes),
				schdcache.WithResourceTransformations(cfg.Resources.Transformations))
		}
		fairSharing = cfg.FairSharing
		cacheOptions = append(cacheOptions, schdcache.WithFairSharing(fairsharing.Enabled(fairSharing)))
	}
	snap, err := kueueSnapshot(ctx, s, req.Kueue, req.Nodes, cacheOptions)
	if err != nil {
		for i := range answers {
			answers[i] = admitAnswer{Skipped: fmt.Sprintf("Kueue's scheduler cache refuses the cluster's queue objects: %v", err)}
		}
		return answers
	}
	preemptor := preemption.New(emptyCluster(), workload.Ordering{}, &record.FakeRecorder{}, fairSharing, false, // (events dropped)
		clock.RealClock{}, nil, expectations.NewStore("admit"), nil)
	for i, j := range req.Jobs {
		answers[i] = admitOne(ctx, s, snap, preemptor, fairSharing, j, infoOptions)
	}
	return answers
}

func admitOne(ctx context.Context, s *schemaSet, snap *schdcache.Snapshot, preemptor *preemption.Preemptor, fs *configapi.FairSharing,
	j admitJob, infoOptions []workload.InfoOption) (answer admitAnswer) {
	cq := snap.ClusterQueue(kueue.ClusterQueueReference(j.ClusterQueue))
	if cq == nil {
		return admitAnswer{Skipped: fmt.Sprintf("ClusterQueue %s is inactive or absent in Kueue's cache", j.ClusterQueue)}
	}
	defer func() { // Kueue's code failing on this job fails this job's answer, not the request's others
		if r := recover(); r != nil {
			answer = admitAnswer{Skipped: fmt.Sprintf("Kueue's scheduler fails on this job: %v", r)}
		}
	}()
	u := &unstructured.Unstructured{Object: defaulted(s, j.Object)}
	podSets, handled, err := kueueJobPodSets(ctx, u)
	if !handled {
		return admitAnswer{Skipped: fmt.Sprintf("not a %s Kueue builds a Workload of (the check reports why)", u.GetKind())}
	}
	if err != nil {
		return admitAnswer{Skipped: fmt.Sprintf("Kueue cannot build the job's Workload: %v", err)}
	}
	wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace()}, Spec: kueue.WorkloadSpec{PodSets: podSets}}
	cluster, err := clusterWith(j.Related)
	if err != nil {
		return admitAnswer{Skipped: fmt.Sprintf("a LimitRange of the namespace or a RuntimeClass does not decode: %v", err)}
	}
	workload.AdjustResources(ctx, cluster, wl)
	info := workload.NewInfo(wl, infoOptions...)
	info.ClusterQueue = cq.Name
	if len(workload.ValidateResources(info)) > 0 || len(workload.ValidateLimitRange(ctx, cluster, info)) > 0 {
		return admitAnswer{Skipped: "Kueue's scheduler finds the Workload invalid (the check reports why)"}
	}
	assign := func(i *workload.Info) flavorassigner.Assignment {
		return flavorassigner.New(i, cq, snap.ResourceFlavors, fairsharing.Enabled(fs), preemption.NewOracle(preemptor, snap), nil).
			Assign(logr.Discard(), nil)
	}
	assignment := assign(info)
	if assignment.RepresentativeMode() == flavorassigner.NoFit {
		assignment = firstShortfall(info, cq, assign, assignment)
	}
	answer = admitAnswer{Mode: modeName(assignment.RepresentativeMode()), Message: assignment.Message()}
	for _, ps := range info.TotalRequests {
		out := admitPodSet{Name: string(ps.Name), Count: ps.Count, Requests: map[string]string{}, Flavors: map[string]string{}}
		for name, value := range ps.Requests.ToResourceList() {
			out.Requests[string(name)] = value.String()
		}
		for _, a := range assignment.PodSets {
			if a.Name != ps.Name {
				continue
			}
			for name, f := range a.Flavors {
				out.Flavors[string(name)] = string(f.Name)
			}
			if !a.Status.IsFit() {
				out.Reasons = a.Status.Message()
			}
		}
		answer.PodSets = append(answer.PodSets, out)
	}
	return answer
}

// firstShortfall: Kueue's flavor assigner walks a job's resources in Go map order and stops at the first that does not
// fit, so a job short of two resources gets either reason from run to run. The gate names the first in the
// ClusterQueue's own order (resource groups as written, names sorted within a group): the same assigner run on the
// job's requests cut to the resources up to each one; the first cut that does not fit gives the reasons. When every cut
// fits (the shortfall needs resources together, or one no group covers), Kueue's own answer on the whole job stands.
func firstShortfall(info *workload.Info, cq *schdcache.ClusterQueueSnapshot, assign func(*workload.Info) flavorassigner.Assignment,
	whole flavorassigner.Assignment) flavorassigner.Assignment {
	var order []corev1.ResourceName
	for _, rg := range cq.ResourceGroups {
		order = append(order, utilsets.List(rg.CoveredResources)...)
	}
	for k := 1; k <= len(order); k++ {
		keep := utilsets.New(order[:k]...)
		cut := *info
		cut.TotalRequests = make([]workload.PodSetResources, len(info.TotalRequests))
		for i, ps := range info.TotalRequests {
			ps.Requests = resources.Requests{}
			for name, value := range info.TotalRequests[i].Requests {
				if keep.Has(name) {
					ps.Requests[name] = value
				}
			}
			cut.TotalRequests[i] = ps
		}
		if a := assign(&cut); a.RepresentativeMode() == flavorassigner.NoFit {
			return a
		}
	}
	return whole
}

// kueueJobPodSets: the pod sets of the Workload Kueue's integration for the object's kind builds of it (a RayJob's,
// RayCluster's or RayService's own PodSets, as its job reconciler calls them); handled false for another kind, or an
// object that does not decode as its kind (the check reports why), or a RayJob without rayClusterSpec (it names a
// cluster by clusterSelector: Kueue does not manage it).
func kueueJobPodSets(ctx context.Context, u *unstructured.Unstructured) (podSets []kueue.PodSet, handled bool, err error) {
	if u.GroupVersionKind().GroupVersion() != rayv1.GroupVersion {
		return nil, false, nil
	}
	switch u.GetKind() {
	case "RayJob":
		job, errs := rayJobOf(u)
		if job == nil || len(errs) > 0 || job.Spec.RayClusterSpec == nil {
			return nil, false, nil
		}
		podSets, err = (*rayjob.RayJob)(job).PodSets(ctx)
	case "RayCluster":
		cluster := &rayv1.RayCluster{}
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cluster) != nil {
			return nil, false, nil
		}
		podSets, err = (*raycluster.RayCluster)(cluster).PodSets(ctx)
	case "RayService":
		service := &rayv1.RayService{}
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, service) != nil {
			return nil, false, nil
		}
		podSets, err = (*rayservice.RayService)(service).PodSets(ctx)
	default:
		return nil, false, nil
	}
	return podSets, true, err
}

func modeName(m flavorassigner.FlavorAssignmentMode) string {
	switch m {
	case flavorassigner.Fit:
		return "Fit"
	case flavorassigner.Preempt:
		return "Preempt"
	}
	return "NoFit"
}

// kueueSnapshot is Kueue's scheduler cache of the cluster's queue objects and Nodes, as the manager's
// controllers fill it, and its snapshot.
func kueueSnapshot(ctx context.Context, s *schemaSet, objects, nodes []map[string]interface{}, options []schdcache.Option) (*schdcache.Snapshot, error) {
	cache := schdcache.New(emptyCluster(), options...)
	log := logr.Discard()
	for _, n := range nodes {
		node := &corev1.Node{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(n, node); err != nil {
			return nil, fmt.Errorf("a Node does not decode: %v", err)
		}
		cache.TASCache().SyncNode(node)
	}
	// Flavors, topologies and admission checks first, cohorts, then the queues (a queue added before its flavors is
	// inactive until they come).
	order := map[string]int{"ResourceFlavor": 0, "Topology": 1, "AdmissionCheck": 1, "Cohort": 2, "ClusterQueue": 3}
	sorted := append([]map[string]interface{}{}, objects...)
	sort.SliceStable(sorted, func(a, b int) bool {
		return order[fmt.Sprint(sorted[a]["kind"])] < order[fmt.Sprint(sorted[b]["kind"])]
	})
	for _, obj := range sorted {
		kind := fmt.Sprint(obj["kind"])
		var typed runtime.Object
		switch kind {
		case "ResourceFlavor":
			typed = &kueue.ResourceFlavor{}
		case "Topology":
			typed = &kueue.Topology{}
		case "Cohort":
			typed = &kueue.Cohort{}
		case "AdmissionCheck":
			typed = &kueue.AdmissionCheck{}
		case "ClusterQueue":
			typed = &kueue.ClusterQueue{}
		default:
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(defaulted(s, obj), typed); err != nil {
			continue // the check reports an object that does not decode; the cluster has no such object
		}
		switch o := typed.(type) {
		case *kueue.ResourceFlavor:
			cache.AddOrUpdateResourceFlavor(log, o)
		case *kueue.Topology:
			cache.AddOrUpdateTopology(log, o)
		case *kueue.Cohort:
			_ = cache.AddOrUpdateCohort(o) // a refused one is the check's finding
		case *kueue.AdmissionCheck:
			// Active, as its controller would mark it: Kueue reserves quota before the checks run, so whether a job
			// could ever get quota does not depend on them (the queue-activity rules judge whether a check can be
			// active). A queue stays inactive for its other reasons (stopPolicy, missing flavors or checks, MultiKueue
			// beside ProvisioningRequest), as Kueue's own inactiveReason decides.
			apimeta.SetStatusCondition(&o.Status.Conditions, metav1.Condition{Type: kueue.AdmissionCheckActive, Status: metav1.ConditionTrue,
				Reason: "Active", Message: "fluxbuild: presumed active to judge the fit"})
			cache.AddOrUpdateAdmissionCheck(log, o)
		case *kueue.ClusterQueue:
			_ = cache.AddClusterQueue(ctx, o)
		}
	}
	return cache.Snapshot(ctx)
}

// defaulted is a copy of `obj` with its CRD's defaults, as the apiserver stores it; `obj` itself when
// the kind is not a CRD of the schema directory.
func defaulted(s *schemaSet, obj map[string]interface{}) map[string]interface{} {
	c := s.crds.lookup(obj)
	if c == nil || c.build() != nil {
		return obj
	}
	out := runtime.DeepCopyJSON(obj)
	structuraldefaulting.Default(out, c.structural)
	return out
}
