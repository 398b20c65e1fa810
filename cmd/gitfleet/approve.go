package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spf13/cobra"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/status"
)

// approveOptions are the flags of approve.
type approveOptions struct {
	repo, namespace, branch, message string
	commit                           bool
}

func newApproveCommand() *cobra.Command {
	var o approveOptions
	cmd := &cobra.Command{
		Use:   "approve NAME",
		Short: "Approve an approval request by writing its Approved condition into the repository",
		Long: `approve is gitfleet's 'kubectl fleet approve': it adds the Approved condition
to the approval request file approvals/NAME.yaml (approvals/NAMESPACE/NAME.yaml
with -n) in --repo, a local clone or working tree of the fleet repository.
Once the change reaches the branch gitfleet tracks, the run moves on.

The condition is exactly what the engine accepts: status True and
observedGeneration equal to the request's metadata.generation. An Approved
condition at another generation is ignored by KubeFleet and gitfleet alike —
the most common reason a hand-written approval "does nothing" — so approve
corrects one it finds and says so. A request already approved at the right
generation is left alone.

gitfleet pushes a branch gitfleet/approve/NAME with this very change for
every request it opens; approve is for doing it yourself: with --commit it
commits the file with your git identity, and with --branch B it first creates
(or switches to) branch B, ready to push for a pull request. Who may approve is
decided by who may merge: protect the branch gitfleet tracks.`,
		Example: `  # Approve in the working tree, then review, commit and push yourself
  gitfleet approve example-run-after-canary --repo ./fleet

  # Commit the approval on a new branch and open a pull request from it
  gitfleet approve example-run-after-canary --branch approve-canary
  git push -u origin approve-canary

  # Commit straight onto the current branch
  gitfleet approve example-run-after-canary --commit && git push

  # A namespaced ApprovalRequest
  gitfleet approve web-app-rollout-after-canary -n my-app-namespace --commit`,
		Args: cobra.ExactArgs(1),
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			return pendingApprovals(o.repo, o.namespace, args), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return approve(cmd.Context(), cmd.OutOrStdout(), args[0], o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.repo, "repo", ".", "path of a local clone or working tree of the fleet repository")
	f.StringVarP(&o.namespace, "namespace", "n", "", "namespace of an ApprovalRequest (empty: a ClusterApprovalRequest)")
	f.BoolVar(&o.commit, "commit", false, "commit the change with git (your identity and hooks apply)")
	f.StringVar(&o.branch, "branch", "", "switch to this branch (created from HEAD if missing) before approving, and commit there (implies --commit)")
	f.StringVar(&o.message, "message", "", `commit message (default "approve NAME" and which stage of which run it releases)`)
	return cmd
}

// approve writes the approval and, if asked, commits it.
func approve(ctx context.Context, out io.Writer, name string, o approveOptions) error {
	p := approvalPath(o.namespace, name)
	ar, err := readApproval(o.repo, p, o.namespace, name)
	if err != nil {
		var repairErr error
		if ar, repairErr = repairApproval(ctx, out, o.repo, p, err); repairErr != nil {
			return errors.Join(err, repairErr)
		}
	}
	if o.branch != "" {
		// Switch only once the request is known to exist, so a typo
		// leaves the person on their branch; then read the branch's copy.
		o.commit = true
		if err := switchBranch(ctx, o.repo, o.branch); err != nil {
			return err
		}
		if ar, err = readApproval(o.repo, p, o.namespace, name); err != nil {
			var repairErr error
			if ar, repairErr = repairApproval(ctx, out, o.repo, p, err); repairErr != nil {
				return errors.Join(err, repairErr)
			}
		}
	}
	resource := strings.ToLower(ar.Kind) + "." + fleet.PlacementGroup + "/" + ar.Name
	gen, cond, approved := approval(ar)
	if approved {
		fmt.Fprintf(out, "%s already approved (observedGeneration %d); %s unchanged\n", resource, gen, p)
	} else {
		if cond != nil && cond.Status == metav1.ConditionTrue {
			fmt.Fprintf(out, "fixed: the Approved condition had observedGeneration %d, but the request is at generation %d, and an approval at another generation is ignored\n",
				cond.ObservedGeneration, gen)
		} else if cond != nil {
			fmt.Fprintf(out, "the Approved condition was %s; it is True now\n", cond.Status)
		}
		data, err := status.Encode(status.ApprovedCopy(ar, now()))
		if err != nil {
			return err
		}
		if err := status.Dir(o.repo).Commit(ctx, status.Changeset{Writes: map[string][]byte{p: data}}, "", false); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		fmt.Fprintf(out, "%s approved\n", resource)
	}
	if !o.commit {
		return nil
	}
	msg := o.message
	if msg == "" {
		msg = fmt.Sprintf("approve %s\n\nMerging this change approves stage %s of %s.", ar.Name, ar.Spec.TargetStage, ar.Spec.TargetUpdateRun)
	}
	return commitFile(ctx, out, o.repo, p, msg, o.branch != "")
}

// approval returns the request's generation, its Approved condition, and
// whether that condition approves it: True at that generation (spec §4.2).
// A request without a generation is at 1, where the hub creates every
// request, as status.ApprovedCopy assumes.
func approval(ar *fleet.ApprovalRequest) (gen int64, cond *metav1.Condition, approved bool) {
	gen = max(ar.Generation, 1)
	cond = meta.FindStatusCondition(ar.Status.Conditions, fleet.ApprovalRequestConditionApproved)
	return gen, cond, cond != nil && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == gen
}

// pendingApprovals are the requests of the namespace (none: cluster-scoped)
// that are not approved at their generation yet: what shell completion
// offers.
func pendingApprovals(repo, namespace string, args []string) []string {
	if len(args) > 0 {
		return nil
	}
	objs, _ := readFamily(repo, status.ApprovalsDir)
	var names []string
	for _, o := range objs {
		ar, ok := o.(*fleet.ApprovalRequest)
		if !ok || ar.Namespace != namespace {
			continue
		}
		if _, _, approved := approval(ar); !approved {
			names = append(names, ar.Name)
		}
	}
	return names
}

// approvalPath is where gitfleet writes the request (status.PathFor).
func approvalPath(namespace, name string) string {
	if namespace != "" {
		return status.ApprovalsDir + "/" + namespace + "/" + name + ".yaml"
	}
	return status.ApprovalsDir + "/" + name + ".yaml"
}

// readApproval decodes the request file p, pointing at the right file when
// the request is in another namespace than asked.
func readApproval(repo, p, namespace, name string) (*fleet.ApprovalRequest, error) {
	data, err := status.Dir(repo).Read(p)
	if errors.Is(err, fs.ErrNotExist) {
		msg := fmt.Sprintf("approval request %s not found: no %s in %s", name, p, repo)
		if others, _ := filepath.Glob(filepath.Join(repo, status.ApprovalsDir, "*", name+".yaml")); len(others) > 0 && namespace == "" {
			ns := filepath.Base(filepath.Dir(others[0]))
			msg += fmt.Sprintf("; there is an ApprovalRequest in namespace %s: use -n %s", ns, ns)
		}
		return nil, errors.New(msg + " (pull first: gitfleet commits a request when a stage needs approval)")
	}
	if err != nil {
		return nil, err
	}
	obj, err := status.DecodeFile(p, data)
	if err != nil {
		return nil, err
	}
	ar, ok := obj.(*fleet.ApprovalRequest)
	if !ok {
		return nil, fmt.Errorf("%s: holds a %s, not an approval request", p, obj.GetObjectKind().GroupVersionKind().Kind)
	}
	if want, err := status.PathFor(ar); err != nil || want != p {
		return nil, fmt.Errorf("%s: holds approval request %s, which belongs in %s", p, objectName(ar), want)
	}
	return ar, nil
}

// repairApproval rebuilds a request whose file does not read (a broken
// edit): from the newest commit in which the file read, gitfleet's own
// record of it. The approval is then written over the broken file.
func repairApproval(ctx context.Context, out io.Writer, repo, p string, broken error) (*fleet.ApprovalRequest, error) {
	if _, err := os.Stat(filepath.Join(repo, filepath.FromSlash(p))); err != nil {
		return nil, errors.New("nothing to repair")
	}
	log, err := git(ctx, repo, "log", "--format=%H", "-n", "100", "--", p)
	if err != nil {
		return nil, fmt.Errorf("cannot look for a good version of %s: %w", p, err)
	}
	for _, commit := range strings.Fields(log) {
		data, err := git(ctx, repo, "show", commit+":"+p)
		if err != nil {
			continue
		}
		obj, err := status.DecodeFile(p, []byte(data+"\n"))
		if ar, ok := obj.(*fleet.ApprovalRequest); err == nil && ok {
			if want, err := status.PathFor(ar); err == nil && want == p {
				fmt.Fprintf(out, "repaired: %s did not read (%v); rebuilt from its version in commit %.12s\n", p, broken, commit)
				return ar, nil
			}
		}
	}
	return nil, fmt.Errorf("no earlier version of %s reads; pull gitfleet's copy first (git pull)", p)
}

// switchBranch switches the repository to branch, creating it from HEAD when
// it does not exist yet.
func switchBranch(ctx context.Context, repo, branch string) error {
	if _, err := git(ctx, repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch); err == nil {
		_, err := git(ctx, repo, "switch", branch)
		return err
	}
	_, err := git(ctx, repo, "switch", "-c", branch)
	return err
}

// commitFile commits p alone (other staged changes stay staged), unless it
// is unchanged since HEAD, and says what to do next: open a pull request
// from a branch made for it, or push.
func commitFile(ctx context.Context, out io.Writer, repo, p, msg string, forPullRequest bool) error {
	changed, err := git(ctx, repo, "status", "--porcelain", "--", p)
	if err != nil {
		return err
	}
	if changed == "" {
		fmt.Fprintf(out, "%s is committed already; nothing to commit\n", p)
		return nil
	}
	if _, err := git(ctx, repo, "add", "--", p); err != nil {
		return err
	}
	if _, err := git(ctx, repo, "commit", "--quiet", "-m", msg, "--", p); err != nil {
		return err
	}
	head, err := git(ctx, repo, "rev-parse", "--short", "HEAD")
	if err != nil {
		return err
	}
	branch, err := git(ctx, repo, "branch", "--show-current")
	if err != nil {
		return err
	}
	if forPullRequest {
		fmt.Fprintf(out, "committed %s on branch %s; push it (git push -u origin %s) and merge it into the branch gitfleet tracks to approve (git merge --no-ff %s, so the merge names you)\n", head, branch, branch, branch)
	} else {
		fmt.Fprintf(out, "committed %s on branch %s; the approval counts once it reaches the branch gitfleet tracks (git push)\n", head, branch)
	}
	return nil
}

// git runs the git CLI in repo with the user's environment (identity,
// signing, hooks) and returns its trimmed standard output; a failure
// carries git's own message.
func git(ctx context.Context, repo string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = repo
	cmd.Env = os.Environ()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
	}
	return strings.TrimSpace(stdout.String()), nil
}
