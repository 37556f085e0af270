package main

// The pods a plain workload's controller creates from its pod template, for `place`: a Deployment's,
// ReplicaSet's or StatefulSet's replicas, a Job's parallel pods (a CronJob's Jobs alike) and a bare Pod, each as the
// apiserver stores the object (its version's defaults: replicas 1, parallelism 1, the pod template's defaults) and
// the controller copies the template into its pods (the template's labels, annotations and spec). A DaemonSet is left
// out: its controller creates a pod only for the nodes the pod may run on. The operators' charts (rendered by
// the gate with Helm's engine) create these; the gate places them on the cluster's node pools.

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/utils/ptr"
)

// templatePods is the object's pods to place (one built, counted `replicas` times), nil when the object is no such
// workload or does not decode (its checks report that).
func templatePods(obj map[string]interface{}) []built {
	u := &unstructured.Unstructured{Object: obj}
	gvk := u.GroupVersionKind()
	if !legacyscheme.Scheme.Recognizes(gvk) {
		return nil
	}
	typed, err := legacyscheme.Scheme.New(gvk)
	if err != nil || runtime.DefaultUnstructuredConverter.FromUnstructured(runtime.DeepCopyJSON(obj), typed) != nil {
		return nil
	}
	legacyscheme.Scheme.Default(typed)
	var template corev1.PodTemplateSpec
	path, count := "spec.template", int32(1)
	jobCount := func(spec batchv1.JobSpec) int32 {
		n := ptr.Deref(spec.Parallelism, 1)
		if spec.Completions != nil && *spec.Completions < n {
			n = *spec.Completions // the Job controller never runs more pods than completions are left
		}
		return n
	}
	switch o := typed.(type) {
	case *appsv1.Deployment:
		template, count = o.Spec.Template, ptr.Deref(o.Spec.Replicas, 1)
	case *appsv1.ReplicaSet:
		template, count = o.Spec.Template, ptr.Deref(o.Spec.Replicas, 1)
	case *appsv1.StatefulSet:
		template, count = o.Spec.Template, ptr.Deref(o.Spec.Replicas, 1)
	case *batchv1.Job:
		template, count = o.Spec.Template, jobCount(o.Spec)
	case *batchv1.CronJob:
		template, count, path = o.Spec.JobTemplate.Spec.Template, jobCount(o.Spec.JobTemplate.Spec), "spec.jobTemplate.spec.template"
	case *corev1.Pod:
		template, path = corev1.PodTemplateSpec{ObjectMeta: o.ObjectMeta, Spec: o.Spec}, ""
	default:
		return nil
	}
	pod := corev1.Pod{ObjectMeta: *template.ObjectMeta.DeepCopy(), Spec: *template.Spec.DeepCopy()}
	pod.Name, pod.GenerateName, pod.Namespace = "", u.GetName()+"-", namespaceName(u.GetNamespace())
	return []built{{fmt.Sprintf("%s %s", gvk.Kind, u.GetName()), path, pod, template, int(count)}}
}
