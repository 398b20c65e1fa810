package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/gitfleet/gitfleet/internal/leader"
	"github.com/gitfleet/gitfleet/reconciler/agent"
	"github.com/gitfleet/gitfleet/reconciler/member/kube"
)

// agentOptions are the flags of gitfleet agent.
type agentOptions struct {
	hubKubeconfig, hubContext string
	memberName                string
	kubeconfig, context       string
	driftCheckInterval        time.Duration
}

func newAgentCommand() *cobra.Command {
	var o agentOptions
	cmd := &cobra.Command{
		Use:   "agent --hub-kubeconfig FILE --member-name NAME",
		Short: "Run on a member cluster that pulls: apply the Works the hub holds for it",
		Long: `gitfleet agent runs on (or beside) a member cluster whose MemberCluster says
gitfleet.io/driver: work. It joins the fleet through the member's
InternalMemberCluster on the hub (heartbeats, properties from its nodes),
applies the Works of its namespace fleet-member-<name> to the member with
server-side apply and kstatus (the same code as serve's kubeconfig: members),
records what it applied in the member's AppliedWorks, reports each manifest's
conditions on the Work, prunes what a Work no longer holds, and leaves when the
MemberCluster is deleted. It needs, on the hub, only its own namespace: serve
--hub kube grants the MemberCluster's spec.identity that namespace.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAgent(cmd.Context(), o, slog.Default())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.hubKubeconfig, "hub-kubeconfig", "", "kubeconfig of the hub cluster, as the member's identity (required)")
	f.StringVar(&o.hubContext, "hub-context", "", "kubeconfig context of the hub cluster (default: the current context)")
	f.StringVar(&o.memberName, "member-name", "", "the member's MemberCluster name (required)")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the member cluster (default: the pod's service account in a cluster, else KUBECONFIG or ~/.kube/config)")
	f.StringVar(&o.context, "context", "", "kubeconfig context of the member cluster (default: the current context)")
	f.DurationVar(&o.driftCheckInterval, "drift-check-interval", kube.DefaultDriftCheckInterval, "compare what the member holds with its Works this often, report drifts and diffs, and re-apply where the apply strategy says so; 0 only when a Work changes")
	return cmd
}

func runAgent(ctx context.Context, o agentOptions, log *slog.Logger) error {
	if o.hubKubeconfig == "" {
		return errors.New("--hub-kubeconfig is required: the agent reaches the hub as its member's identity")
	}
	if o.memberName == "" {
		return errors.New("--member-name is required")
	}
	hubConfig, err := leader.RESTConfig(o.hubKubeconfig, o.hubContext)
	if err != nil {
		return err
	}
	memberConfig, err := leader.RESTConfig(o.kubeconfig, o.context)
	if err != nil {
		return fmt.Errorf("member: %w", err)
	}
	for _, c := range []*rest.Config{hubConfig, memberConfig} {
		c.UserAgent = "gitfleet-agent"
	}
	m, err := agent.KubeMember(ctx, memberConfig, 0)
	if err != nil {
		return fmt.Errorf("member: %w", err)
	}
	a, err := agent.New(agent.Config{Hub: hubConfig, MemberName: o.memberName, DriftCheckInterval: o.driftCheckInterval, Log: log}, m)
	if err != nil {
		return err
	}
	log.Info("gitfleet agent starting", "member", o.memberName, "hub", hubConfig.Host, "version", version)
	return a.Run(ctx)
}
