package main

// The admission a RayJob's pods meet in their namespace once Kueue admits the job: the LimitRanger's
// defaults (mutating, before validation) and the ResourceQuota admission (after it), with the
// apiserver's own code (plugin/pkg/admission/limitranger, pkg/quota/v1/evaluator/core and
// k8s.io/apiserver's quota arithmetic). Kueue does not look at ResourceQuotas: a job its ClusterQueue
// admits whose pods together exceed a quota of their namespace gets some pods and is forbidden the
// rest, so it never runs while it holds its quota.

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1defaults "k8s.io/kubernetes/pkg/apis/core/v1"
	"k8s.io/kubernetes/pkg/quota/v1/evaluator/core"
	"k8s.io/kubernetes/plugin/pkg/admission/limitranger"
	"k8s.io/utils/clock"
)

// namespaceObjects are the LimitRanges and ResourceQuotas of the pods' namespace on the cluster, and the Namespace.
type namespaceObjects struct {
	limitRanges []*corev1.LimitRange
	quotas      []*corev1.ResourceQuota
	namespace   *corev1.Namespace // its labels: the PodSecurity level it enforces (security.go)
	classes     runtimeClasses    // the cluster's RuntimeClasses, with the apiserver's admission of them (runtimeclass.go)
}

// namespaceOf: `related` are the LimitRanges, ResourceQuotas and Namespace of the pods' namespace and the cluster's
// RuntimeClasses.
func namespaceOf(related []map[string]interface{}) (namespaceObjects, error) {
	var ns namespaceObjects
	var classes []map[string]interface{}
	for _, obj := range related {
		switch obj["kind"] {
		case "LimitRange":
			lr := &corev1.LimitRange{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, lr); err != nil {
				return ns, fmt.Errorf("LimitRange does not decode: %v", err)
			}
			// As the apiserver stores it: a Container limit's default is its max, its defaultRequest its default.
			corev1defaults.SetObjectDefaults_LimitRange(lr)
			ns.limitRanges = append(ns.limitRanges, lr)
		case "Namespace":
			namespace := &corev1.Namespace{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, namespace); err != nil {
				return ns, fmt.Errorf("Namespace does not decode: %v", err)
			}
			ns.namespace = namespace
		case "ResourceQuota":
			rq := &corev1.ResourceQuota{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, rq); err != nil {
				return ns, fmt.Errorf("ResourceQuota does not decode: %v", err)
			}
			// The quota controller copies spec.hard to status.hard, which the admission reads; used is 0 in
			// a namespace where nothing else runs.
			rq.Status.Hard = rq.Spec.Hard.DeepCopy()
			ns.quotas = append(ns.quotas, rq)
		case "RuntimeClass":
			classes = append(classes, obj)
		}
	}
	var err error
	ns.classes, err = newRuntimeClasses(classes)
	return ns, err
}

// admitted is the pod as the mutating admission before validation leaves it, in the apiserver's plugin order: the
// LimitRanger's defaults, then the RuntimeClass's overhead and scheduling.
func (ns namespaceObjects) admitted(pod *api.Pod) error {
	for _, lr := range ns.limitRanges {
		if err := limitranger.PodMutateLimitFunc(lr, pod); err != nil {
			return err
		}
	}
	return ns.classes.admit(pod)
}

// limitErrors are the LimitRanger's validating admission's refusals of the pod (after the object's validation): a
// container, init containers and the ones KubeRay adds included, below a LimitRange's min, above its max, or with a
// limit-to-request ratio above its maxLimitRequestRatio (apiserver: 403 Forbidden).
func (ns namespaceObjects) limitErrors(pod *api.Pod) []metav1.StatusCause {
	var out []metav1.StatusCause
	for _, lr := range ns.limitRanges {
		err := limitranger.PodValidateLimitFunc(lr, pod)
		if err == nil {
			continue
		}
		// The refusal names no container: the same function on the pod with one container at a time finds which (a
		// LimitRange of type Pod judges them together, so then none alone and the pod is named).
		var found []metav1.StatusCause
		for _, list := range []struct {
			path       string
			containers []api.Container
			init       bool
		}{{"spec.initContainers", pod.Spec.InitContainers, true}, {"spec.containers", pod.Spec.Containers, false}} {
			for i, c := range list.containers {
				single := pod.DeepCopy()
				single.Spec.InitContainers, single.Spec.Containers = nil, nil
				if list.init {
					single.Spec.InitContainers = []api.Container{c}
				} else {
					single.Spec.Containers = []api.Container{c}
				}
				if one := limitranger.PodValidateLimitFunc(lr, single); one != nil {
					found = append(found, metav1.StatusCause{Type: metav1.CauseTypeForbidden, Field: fmt.Sprintf("%s[%d]", list.path, i),
						Message: fmt.Sprintf("LimitRange %s/%s forbids container %s: %v", lr.Namespace, lr.Name, c.Name, one)})
				}
			}
		}
		if len(found) == 0 {
			found = []metav1.StatusCause{{Type: metav1.CauseTypeForbidden, Message: fmt.Sprintf("LimitRange %s/%s forbids it: %v", lr.Namespace, lr.Name, err)}}
		}
		out = append(out, found...)
	}
	return out
}

// charged is one object the job's creation makes in its namespace (count of them), as the ResourceQuota admission judges
// it: `what` names it in a message, `field` is where the user wrote what makes it count ("" for the sample itself).
type charged struct {
	obj   runtime.Object
	gr    schema.GroupResource
	count int
	what  string
	field string
}

// evaluatorFor: the apiserver's quota evaluator of a resource, as its ResourceQuota admission picks it: the registered
// ones of pods and services (pkg/quota/v1/evaluator/core), an object count evaluator for any other resource
// (count/jobs.batch, count/rayclusters.ray.io), which the admission creates when it meets one (quotaEvaluator.Evaluate).
func evaluatorFor(gr schema.GroupResource) quota.Evaluator {
	switch gr {
	case corev1.Resource("pods"):
		return core.NewPodEvaluator(nil, clock.RealClock{})
	case corev1.Resource("services"):
		return core.NewServiceEvaluator(nil)
	}
	return generic.NewObjectCountEvaluator(gr, nil, "")
}

// quotaErrors are the ResourceQuota admission's refusals of what KubeRay creates for the job (its pods, and the other
// objects: the RayCluster, its Services, the submitter Job), created in an otherwise empty namespace: a pod that lacks a
// resource a quota tracks, or the objects' total usage above a hard limit.
func (ns namespaceObjects) quotaErrors(items []charged) []fieldError {
	var out []fieldError
	for _, rq := range ns.quotas {
		hard := rq.Status.Hard
		names := quota.ResourceNames(hard)
		used := corev1.ResourceList{}
		by := map[corev1.ResourceName][]charged{} // the objects other than pods that use each resource
		var missing []string
		for _, item := range items {
			evaluator := evaluatorFor(item.gr)
			if ok, err := evaluator.Matches(rq, item.obj); err != nil || !ok {
				continue
			}
			if err := evaluator.Constraints(names, item.obj); err != nil {
				missing = append(missing, err.Error())
				continue
			}
			usage, err := evaluator.Usage(item.obj)
			if err != nil {
				continue
			}
			usage = quota.Mask(usage, names)
			for n := 0; n < item.count; n++ {
				used = quota.Add(used, usage)
			}
			for name, q := range usage {
				if !q.IsZero() && item.gr != corev1.Resource("pods") {
					by[name] = append(by[name], item)
				}
			}
		}
		where := fmt.Sprintf("ResourceQuota %s/%s", rq.Namespace, rq.Name)
		if len(missing) > 0 {
			sort.Strings(missing)
			msg := fmt.Sprintf("%s forbids its pods: %s", where, strings.Join(missing, "; "))
			out = append(out, fieldError{Type: "Forbidden", Detail: msg, Message: msg, Object: "ResourceQuota/" + rq.Namespace + "/" + rq.Name})
			continue
		}
		if ok, over := quota.LessThanOrEqual(used, hard); !ok {
			var parts []string
			field, objects := "", false
			for _, name := range over {
				u, h := used[name], hard[name]
				part := fmt.Sprintf("%s %s against %s", name, u.String(), h.String())
				var whats []string
				for _, item := range by[name] {
					whats = append(whats, item.what)
					if field == "" {
						field = item.field
					}
				}
				if len(whats) > 0 {
					part += " (" + strings.Join(whats, ", ") + ")"
					objects = true
				}
				parts = append(parts, part)
			}
			sort.Strings(parts)
			var zero, zeroParts []string // the resources it allows none of: it keeps out every job in its scope, whatever its size
			for _, name := range over {
				if h := hard[name]; h.IsZero() {
					zero = append(zero, string(name))
					zeroParts = append(zeroParts, strings.TrimSuffix(fmt.Sprintf("%s (%s)", name, strings.Join(whatsOf(by[name]), ", ")), " ()"))
				}
			}
			if len(zero) == len(over) && field == "" { // (at a value of the job, such as a serviceType, the job is the cause)
				sort.Strings(zero)
				sort.Strings(zeroParts)
				msg := fmt.Sprintf("%s allows none of %s (hard 0)", where, strings.Join(zeroParts, ", "))
				out = append(out, fieldError{Field: field, Type: "Forbidden", Detail: msg, Message: msg, Zero: zero,
					Object: "ResourceQuota/" + rq.Namespace + "/" + rq.Name})
				continue
			}
			msg := fmt.Sprintf("%s is exceeded by the job's pods together (%s): the pods beyond it are forbidden", where, strings.Join(parts, ", "))
			if objects {
				msg = fmt.Sprintf("%s is exceeded by what KubeRay creates for the job (%s): the creations beyond it are forbidden, so "+
					"the job holds its Kueue quota without running", where, strings.Join(parts, ", "))
			}
			out = append(out, fieldError{Field: field, Type: "Forbidden", Detail: msg, Message: msg, Object: "ResourceQuota/" + rq.Namespace + "/" + rq.Name})
		}
	}
	return out
}

// whatsOf: what each of `items` is ("the submitter Job").
func whatsOf(items []charged) []string {
	var out []string
	for _, item := range items {
		out = append(out, item.what)
	}
	return out
}
