package main

// The RuntimeClass admission of the pinned kube-apiserver (plugin/pkg/admission/runtimeclass, on by default and on AKS),
// run with its own code on a cluster holding the RuntimeClasses the cluster's layers apply: its mutating half copies the
// pod's RuntimeClass's overhead into spec.overhead (which kube-scheduler's NodeResourcesFit and the ResourceQuota
// admission then count) and its scheduling into the pod's nodeSelector and tolerations; its validating half refuses a
// pod whose spec.overhead was written without, or differs from, its RuntimeClass's overhead. A pod that names a
// RuntimeClass the cluster does not have is left to object-ref (the plugin would refuse it too: one finding).

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/plugin/pkg/admission/runtimeclass"
)

const overheadHint = " (the RuntimeClass admission sets spec.overhead from the pod's runtimeClassName: remove it from the template)"

// runtimeClasses is the plugin on a cluster with `classes` (by name; a later one of a name replaces an earlier).
type runtimeClasses struct {
	plugin *runtimeclass.RuntimeClass
	names  map[string]bool
}

// admissionRefusal is an admission plugin's refusal of a pod, with the pod field that causes it.
type admissionRefusal struct {
	field string
	err   error
}

func (r *admissionRefusal) Error() string { return r.err.Error() }

func newRuntimeClasses(objects []map[string]interface{}) (runtimeClasses, error) {
	// Never started nor asked: its lister is filled below, and a class it lacks is never looked up (see above).
	client := kubernetes.NewForConfigOrDie(&rest.Config{Host: "https://gate.invalid"})
	factory := informers.NewSharedInformerFactory(client, 0)
	out := runtimeClasses{plugin: runtimeclass.NewRuntimeClass(), names: map[string]bool{}}
	out.plugin.SetExternalKubeClientSet(client)
	out.plugin.SetExternalKubeInformerFactory(factory)
	indexer := factory.Node().V1().RuntimeClasses().Informer().GetIndexer()
	for _, obj := range objects {
		rc := &nodev1.RuntimeClass{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, rc); err != nil {
			return out, fmt.Errorf("RuntimeClass does not decode: %v", err)
		}
		if err := indexer.Update(rc); err != nil {
			return out, err
		}
		out.names[rc.Name] = true
	}
	return out, nil
}

func (r runtimeClasses) attributes(pod *api.Pod) admission.Attributes {
	return admission.NewAttributesRecord(pod, nil, api.Kind("Pod").WithVersion("v1"), pod.Namespace, pod.Name,
		api.Resource("pods").WithVersion("v1"), "", admission.Create, &metav1.CreateOptions{}, false, nil)
}

// judged: whether the plugin judges the pod here (not when it names a RuntimeClass the cluster lacks, or when there is
// no plugin: a namespaceObjects built without namespaceOf).
func (r runtimeClasses) judged(pod *api.Pod) bool {
	return r.plugin != nil && (pod.Spec.RuntimeClassName == nil || r.names[*pod.Spec.RuntimeClassName])
}

// admit is the plugin's mutating half on the pod (its overhead, nodeSelector and tolerations from its RuntimeClass).
func (r runtimeClasses) admit(pod *api.Pod) error {
	if !r.judged(pod) {
		return nil
	}
	if err := r.plugin.Admit(context.Background(), r.attributes(pod), nil); err != nil {
		if strings.Contains(err.Error(), "Overhead") { // setOverhead: the pod's own overhead differs from its RuntimeClass's
			return &admissionRefusal{"spec.overhead", fmt.Errorf("%v%s", err, overheadHint)}
		}
		return &admissionRefusal{"spec.nodeSelector", err} // setScheduling's conflict with the RuntimeClass's scheduling.nodeSelector
	}
	return nil
}

// validate is the plugin's validating half: a pod whose overhead is not its RuntimeClass's (written in the template
// with no RuntimeClass, or one without overhead) is refused.
func (r runtimeClasses) validate(pod *api.Pod) []metav1.StatusCause {
	if !r.judged(pod) {
		return nil
	}
	if err := r.plugin.Validate(context.Background(), r.attributes(pod), nil); err != nil {
		return []metav1.StatusCause{{Type: metav1.CauseTypeForbidden, Field: "spec.overhead", Message: err.Error() + overheadHint}}
	}
	return nil
}

// refusalField is the pod field an admission refusal names ("" when none).
func refusalField(err error) string {
	var r *admissionRefusal
	if errors.As(err, &r) {
		return r.field
	}
	return ""
}

// admittedScheduling is the nodeSelector and tolerations a pod of `template` has once the RuntimeClass admission merged
// its RuntimeClass's scheduling into it (setScheduling: MergeTolerations, the nodeSelector added): what kube-scheduler
// and the gate's placement rules see. `related` holds the cluster's RuntimeClasses. A template that does not decode, or
// a pod the plugin refuses (the pod check reports both), keeps its own.
func admittedScheduling(template map[string]interface{}, related []map[string]interface{}) map[string]interface{} {
	tmpl := &corev1.PodTemplateSpec{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(template, tmpl); err != nil {
		return map[string]interface{}{"error": err.Error()}
	}
	pod := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	var classes []map[string]interface{}
	for _, obj := range related {
		if obj["kind"] == "RuntimeClass" {
			classes = append(classes, obj)
		}
	}
	if rc, err := newRuntimeClasses(classes); err == nil {
		pod = namespaceObjects{classes: rc}.defaulted(pod)
	}
	return map[string]interface{}{"nodeSelector": pod.Spec.NodeSelector, "tolerations": pod.Spec.Tolerations}
}
