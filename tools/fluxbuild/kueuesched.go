package main

import (
	"context"
	"fmt"
	"strings"
	"sync"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/controller/constants"
	"sigs.k8s.io/kueue/pkg/controller/core/indexer"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	"sigs.k8s.io/kueue/pkg/controller/jobs/rayjob"
	"sigs.k8s.io/kueue/pkg/workload"
)

// schedulerErrors runs what the pinned Kueue's scheduler checks of a RayJob's Workload before it
// looks for quota (scheduler.go: workload.ValidateResources, then workload.ValidateLimitRange, on the
// Workload the job reconciler built with the Ray integration's PodSets and adjusted with
// workload.AdjustResources): a container whose requests exceed its limits, or a pod outside its
// namespace's LimitRange, leaves the Workload inadmissible ("resources validation failed", "resources
// didn't satisfy LimitRange constraints") for as long as it exists, although the apiserver, Kueue's
// webhook and KubeRay accept the RayJob. `related` are the LimitRanges of the RayJob's namespace on its
// cluster (none: a namespace without any) and the cluster's RuntimeClasses (their pod overhead). Other kinds: nil.
func schedulerErrors(ctx context.Context, crds *crdSet, u *unstructured.Unstructured, related []map[string]interface{}) (errs []fieldError) {
	job, errs := rayJobOf(u)
	if job == nil {
		return errs
	}
	if job.Spec.RayClusterSpec == nil {
		return nil // a job on an existing cluster: Kueue's webhook refuses it first
	}
	defer func() { // Kueue's code failing on this object fails this object's check, not the request's others
		if r := recover(); r != nil {
			msg := fmt.Sprintf("Kueue's Ray integration fails on this RayJob: %v", r)
			errs = []fieldError{{Field: "spec", Type: "InternalError", Detail: msg, Message: msg}}
		}
	}()
	podSets, err := (*rayjob.RayJob)(job).PodSets(ctx)
	if err != nil {
		msg := fmt.Sprintf("Kueue cannot build the job's Workload: %v", err)
		return []fieldError{{Field: "spec", Type: "Invalid", Detail: msg, Message: msg}}
	}
	wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Name: job.Name, Namespace: job.Namespace}, Spec: kueue.WorkloadSpec{PodSets: podSets}}
	if errs := workloadCreateErrors(ctx, crds, job, wl); len(errs) > 0 {
		return errs
	}
	cluster, err := clusterWith(related)
	if err != nil {
		msg := fmt.Sprintf("a LimitRange of the namespace or a RuntimeClass does not decode: %v", err)
		return []fieldError{{Field: "metadata.namespace", Type: "InternalError", Detail: msg, Message: msg}}
	}
	workload.AdjustResources(ctx, cluster, wl)
	info := workload.NewInfo(wl)
	reason, list := errInvalidWLResources, workload.ValidateResources(info)
	if len(list) == 0 {
		reason, list = errLimitRangeConstraintsUnsatisfiedResources, workload.ValidateLimitRange(ctx, cluster, info)
	}
	errs = fieldErrors(list)
	for i := range errs {
		path := rayJobPath(errs[i].Field, job)
		errs[i].Message = "Kueue's scheduler: " + reason + ": " + strings.Replace(errs[i].Message, errs[i].Field, path, 1)
		errs[i].Field = path
	}
	return errs
}

// workloadCreateErrors: Kueue's job reconciler creates the RayJob's Workload (named by jobframework, with the Ray
// integration's pod sets); the apiserver validates it against the pinned Workload CRD (schema, list-map keys, CEL) and
// Kueue's Workload webhook. A Workload it refuses is never created: the RayJob stays suspended, never admitted, e.g. two
// worker groups whose names differ only in case (Kueue lowercases pod set names) or a groupName that is no DNS label.
func workloadCreateErrors(ctx context.Context, crds *crdSet, job *rayv1.RayJob, wl *kueue.Workload) []fieldError {
	c := crds.byGVK[kueue.GroupVersion.WithKind("Workload")]
	if c == nil || jobframework.QueueNameForObject(job) == "" {
		return nil // no Workload: Kueue manages only RayJobs with a queue-name label here (manageJobsWithoutQueueName is off)
	}
	created := wl.DeepCopy()
	created.Name = jobframework.GetWorkloadNameForOwnerWithGVK(job.Name, job.UID, rayv1.GroupVersion.WithKind("RayJob"))
	created.Spec.QueueName = kueue.LocalQueueName(job.Labels[constants.QueueLabel])
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(created)
	if err != nil {
		return nil
	}
	obj["apiVersion"], obj["kind"] = kueue.GroupVersion.String(), "Workload"
	result := c.check(ctx, obj, nil)
	if result.Stage == "" {
		return nil
	}
	errs := result.Errors
	for i := range errs {
		path, message := rayJobPath(errs[i].Field, job), errs[i].Message
		if errs[i].Field != "spec.podSets" { // (its count is of pod sets, not worker groups: the message names the Workload's field)
			message = strings.Replace(message, errs[i].Field, path, 1)
		}
		errs[i].Message = "Kueue's job reconciler cannot create the RayJob's Workload, which the apiserver refuses (so the job is " +
			"never admitted): " + message
		errs[i].Field = path
	}
	return errs
}

// clusterWith is a client of a cluster holding only `objects`: the LimitRanges of the job's namespace (Kueue's
// AdjustResources gives their defaults) and the cluster's RuntimeClasses (it charges the pod overhead of the one a pod
// names, handlePodOverhead); the empty cluster when there are none. Other kinds are left out; of two objects with one
// name, the later stands (as the later apply leaves it).
func clusterWith(objects []map[string]interface{}) (client.Client, error) {
	if len(objects) == 0 {
		return emptyCluster(), nil
	}
	type key struct{ kind, namespace, name string }
	builder, seen := clusterBuilder(), map[key]client.Object{}
	var order []key
	for _, obj := range objects {
		var typed client.Object
		switch obj["kind"] {
		case "LimitRange":
			typed = &corev1.LimitRange{}
		case "RuntimeClass":
			typed = &nodev1.RuntimeClass{}
		default:
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, typed); err != nil {
			return nil, fmt.Errorf("%s does not decode: %v", obj["kind"], err)
		}
		k := key{fmt.Sprint(obj["kind"]), typed.GetNamespace(), typed.GetName()}
		if _, found := seen[k]; !found {
			order = append(order, k)
		}
		seen[k] = typed
	}
	for _, k := range order {
		builder = builder.WithObjects(seen[k])
	}
	return builder.Build(), nil
}

// emptyCluster is a client of a cluster with no objects (no LimitRange, no RuntimeClass), built once;
// its deduced type converter spares parsing client-go's apply schemas, which nothing here applies.
var emptyCluster = sync.OnceValue(func() client.Client { return clusterBuilder().Build() })

// clusterBuilder makes the fake clusters above with the LimitRange index Kueue's AdjustResources lists by (the
// manager registers it at start; without it the List fails and no LimitRange default is applied).
func clusterBuilder() *fake.ClientBuilder {
	return fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithTypeConverters(managedfields.NewDeducedTypeConverter()).
		WithIndex(&corev1.LimitRange{}, indexer.LimitRangeHasContainerType, indexer.IndexLimitRangeHasContainerType)
}

// The pinned Kueue scheduler's inadmissible messages (scheduler.go, unexported).
const (
	errInvalidWLResources                        = "resources validation failed"
	errLimitRangeConstraintsUnsatisfiedResources = "resources didn't satisfy LimitRange constraints"
)

// rayJobPath turns a Workload field path (spec.podSets[i].template...) into the RayJob field the pod
// set comes from: the head group, the i-th worker group, or the submitter pod template.
func rayJobPath(path string, job *rayv1.RayJob) string {
	const prefix = "spec.podSets["
	if path == "spec.podSets" { // the list as a whole (too many): the worker groups are what add pod sets to it
		return "spec.rayClusterSpec.workerGroupSpecs"
	}
	if !strings.HasPrefix(path, prefix) {
		return path
	}
	var index int
	if _, err := fmt.Sscanf(path[len(prefix):], "%d]", &index); err != nil {
		return path
	}
	rest := path[strings.Index(path, "]")+1:]
	rest = strings.TrimPrefix(rest, ".template")
	workers := len(job.Spec.RayClusterSpec.WorkerGroupSpecs)
	if (rest == "" || rest == ".name") && index > 0 && index <= workers { // a worker pod set's name is its group's name
		return fmt.Sprintf("spec.rayClusterSpec.workerGroupSpecs[%d].groupName", index-1)
	}
	switch {
	case index == 0:
		return "spec.rayClusterSpec.headGroupSpec.template" + rest
	case index <= workers:
		return fmt.Sprintf("spec.rayClusterSpec.workerGroupSpecs[%d].template%s", index-1, rest)
	default:
		return "spec.submitterPodTemplate" + rest
	}
}
