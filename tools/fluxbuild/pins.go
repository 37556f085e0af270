package main

import (
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/distribution/reference"
	"github.com/fluxcd/pkg/version"
)

// pinsRequest is op pins: the version questions of the gate's versions-drift rule, answered with the libraries
// Flux and the container runtimes use, never by comparing strings. Constraints: an OCIRepository's spec.ref.semver
// and the pinned chart version (an OCI HelmRepository's read as source-controller reads it: OCI); source-controller parses the constraint with Masterminds semver and installs the
// highest tag it admits. Images: image references as a chart renders them (repository:tag, maybe @digest).
type pinsRequest struct {
	Constraints []constraintQuery `json:"constraints,omitempty"`
	Images      []string          `json:"images,omitempty"`
}

type constraintQuery struct {
	Constraint string `json:"constraint"`
	Version    string `json:"version"`
	// OCI: the chart version of an OCI HelmRepository. source-controller's OCIChartRepository.GetChartVersion pulls a
	// version that fluxcd/pkg/version.ParseVersion accepts as the tag written (`v0.17.1` is the tag v0.17.1), and
	// resolves only anything else as a constraint against the registry's tags.
	OCI bool `json:"oci,omitempty"`
}

// constraintAnswer: Pins is true when the constraint admits Version and no higher version (the highest tag it
// admits is then Version whenever the registry has it); Tag, for an OCI query, that the constraint is a version
// pulled as the tag written (Pins then only when it is Version's text); Error is the parse error source-controller
// would report.
type constraintAnswer struct {
	Pins  bool   `json:"pins"`
	Tag   bool   `json:"tag,omitempty"`
	Error string `json:"error,omitempty"`
}

// imageAnswer: an image reference as the container runtime parses it (distribution/reference).
type imageAnswer struct {
	Name   string `json:"name,omitempty"`
	Tag    string `json:"tag,omitempty"`
	Digest string `json:"digest,omitempty"`
	Error  string `json:"error,omitempty"`
}

type pinsAnswer struct {
	Constraints []constraintAnswer `json:"constraints"`
	Images      []imageAnswer      `json:"images"`
}

// admitsHigher: whether the constraint admits a version above v, a pre-release included where the library admits one
// (an OR group any of whose atoms names a pre-release admits pre-releases in every atom: Constraints.Check). The
// library's own parse splits the constraint into its OR groups of AND'ed atoms (Constraints.String writes them back:
// " || " between groups, " " between atoms). Every atom (=, !=, <, <=, >, >=, ~, ^, x-ranges) admits or refuses a whole
// run of versions between boundaries that are its version or that version's next patch, minor or major; a group admits
// an interval, so a version above v exists exactly when the interval's lowest point above v is admitted: v's
// successor, or the lowest version at or above one of the boundaries. Among releases that is the boundary and the
// release after it; counting pre-releases it is a release's lowest pre-release (1.2.3-0), an atom's pre-release itself
// (0.18.0-rc.1) and the one right after it (0.18.0-rc.1.0). Checking these with the library's Check decides the
// question exactly, for `0.17.1 || 0.19.2` as for `>=0.17.1 <0.20`, `~0.17.1` or `0.17.1 || 0.18.0-rc.1`.
func admitsHigher(c *semver.Constraints, v *semver.Version) bool {
	releases := []semver.Version{v.IncPatch()}
	var candidates []semver.Version
	if v.Prerelease() != "" {
		candidates = append(candidates, *semver.New(v.Major(), v.Minor(), v.Patch(), v.Prerelease()+".0", ""))
	}
	for _, group := range strings.Split(c.String(), " || ") {
		for _, atom := range strings.Fields(group) {
			written := strings.TrimLeft(atom, "=!<>~^")
			core := strings.IndexAny(written, "-+")
			if core < 0 {
				core = len(written)
			}
			bound, err := semver.NewVersion(wildcards.Replace(written[:core]) + written[core:])
			if err != nil {
				continue // "*" or "" (any version): v's successor already answers
			}
			if bound.Prerelease() != "" {
				candidates = append(candidates, *semver.New(bound.Major(), bound.Minor(), bound.Patch(), bound.Prerelease(), ""),
					*semver.New(bound.Major(), bound.Minor(), bound.Patch(), bound.Prerelease()+".0", ""))
			}
			base := *semver.New(bound.Major(), bound.Minor(), bound.Patch(), "", "")
			for _, b := range []semver.Version{base, base.IncPatch(), base.IncMinor(), base.IncMajor()} {
				releases = append(releases, b, b.IncPatch())
			}
		}
	}
	for _, r := range releases {
		candidates = append(candidates, r, *semver.New(r.Major(), r.Minor(), r.Patch(), "0", ""))
	}
	for i := range candidates {
		if candidates[i].GreaterThan(v) && c.Check(&candidates[i]) {
			return true
		}
	}
	return false
}

// wildcards: an x-range's wildcard parts read as 0 (the library's own reading of 0.17.x is 0.17.0 with the patch free);
// only in the version's core (a pre-release such as -next keeps its letters).
var wildcards = strings.NewReplacer("x", "0", "X", "0", "*", "0")

func pinsAnswers(req pinsRequest) pinsAnswer {
	out := pinsAnswer{Constraints: make([]constraintAnswer, len(req.Constraints)), Images: make([]imageAnswer, len(req.Images))}
	for i, q := range req.Constraints {
		if _, err := version.ParseVersion(q.Constraint); q.OCI && err == nil {
			out.Constraints[i] = constraintAnswer{Pins: q.Constraint == q.Version, Tag: true}
			continue
		}
		c, err := semver.NewConstraint(q.Constraint)
		if err != nil {
			out.Constraints[i].Error = err.Error()
			continue
		}
		v, err := semver.NewVersion(q.Version)
		if err != nil {
			out.Constraints[i].Error = err.Error()
			continue
		}
		out.Constraints[i].Pins = c.Check(v) && !admitsHigher(c, v)
	}
	for i, image := range req.Images {
		ref, err := reference.ParseNormalizedNamed(image)
		if err != nil {
			out.Images[i].Error = err.Error()
			continue
		}
		out.Images[i].Name = ref.Name()
		if t, ok := ref.(reference.Tagged); ok {
			out.Images[i].Tag = t.Tag()
		}
		if d, ok := ref.(reference.Digested); ok {
			out.Images[i].Digest = d.Digest().String()
		}
	}
	return out
}
