"""Test harness for the Ray-on-AKS GitOps repository: tool builds, offline validation,
the embedded control plane and the Kueue behaviour scenarios."""
