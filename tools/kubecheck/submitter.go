package main

// The submitter Job of a RayJob in K8sJobMode: KubeRay's RayJob controller wraps the submitter pod template
// (common.GetSubmitterTemplate, its own) in a batch/v1 Job (createNewK8sJob, unexported: its Job restated
// below, the fields the apiserver validates) once the RayCluster is up. The apiserver's Job validation refuses
// what the pod check cannot see: a template restartPolicy other than Never or OnFailure (or none), a negative
// submitterConfig.backoffLimit. Then the RayJob waits in Initializing with its cluster up and its quota held.

import (
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/common"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/utils/ptr"
)

// submitterJobErrors: the apiserver's create validation of the submitter Job KubeRay makes for `obj` (a RayJob in
// K8sJobMode with a rayClusterSpec), at the RayJob's fields, and that Job; nil, nil for other objects.
func submitterJobErrors(obj map[string]interface{}) ([]fieldError, *batchv1.Job) {
	job := &rayv1.RayJob{}
	if obj["kind"] != "RayJob" || runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj, job, true) != nil ||
		job.Spec.RayClusterSpec == nil || len(job.Spec.ClusterSelector) > 0 ||
		(job.Spec.SubmissionMode != "" && job.Spec.SubmissionMode != rayv1.K8sJobMode) {
		return nil, nil
	}
	if job.Name == "" && job.GenerateName != "" { // `kubectl create` of a generateName: the apiserver names the RayJob first
		job.Name = stable(names.SimpleNameGenerator.GenerateName(job.GenerateName))
	}
	backoff := ptr.To[int32](2) // createNewK8sJob's default
	if job.Spec.SubmitterConfig != nil && job.Spec.SubmitterConfig.BackoffLimit != nil {
		backoff = job.Spec.SubmitterConfig.BackoffLimit
	}
	submitter := &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: job.Name, Namespace: namespaceName(job.Namespace), Labels: map[string]string{
			utils.RayOriginatedFromCRNameLabelKey: job.Name,
			utils.RayOriginatedFromCRDLabelKey:    utils.RayOriginatedFromCRDLabelValue(utils.RayJobCRD),
			utils.KubernetesCreatedByLabelKey:     utils.ComponentName,
		}},
		Spec: batchv1.JobSpec{BackoffLimit: backoff, Template: common.GetSubmitterTemplate(&job.Spec, job.Spec.RayClusterSpec)},
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(submitter)
	if err != nil {
		return nil, nil
	}
	var out []fieldError
	for _, c := range builtinErrors(u) {
		switch {
		case strings.HasPrefix(c.Field, "spec.template."):
			c.Field = "spec.submitterPodTemplate." + strings.TrimPrefix(c.Field, "spec.template.")
		case c.Field == "spec.backoffLimit":
			c.Field = "spec.submitterConfig.backoffLimit"
		default:
			c.Field = "spec.submitterPodTemplate"
		}
		e := causeError(c)
		e.Message = "the submitter Job KubeRay creates: " + e.Message
		out = append(out, e)
	}
	return out, submitter
}
