/** `trickle native ...`: host capabilities and the privileged clamp setup. */
import type { Command } from 'commander';
import { examples } from '@trickle/e2e/command-help';
import {
  findPodCgroup,
  isInCgroup,
  nativeInfo,
  reapPodPins,
  setupClamp,
  teardownClamp,
  defaultCgroupName,
  defaultPinDir,
  type NativeInfo,
} from '@trickle/native';

function describe(info: NativeInfo): string {
  const line = (name: string, capability: { available: boolean; reason?: string }) =>
    `${name.padEnd(20)} ${capability.available ? 'yes' : `no (${capability.reason})`}`;
  return [
    `${'platform'.padEnd(20)} ${info.platform} ${info.kernel}${info.supported ? '' : ' (unsupported)'}`,
    line('native addon', info.addon),
    line('TCP_INFO', info.tcpInfo),
    line('SO_MAX_PACING_RATE', info.pacingRate),
    `${'congestion control'.padEnd(20)} ` +
      `default ${info.congestionControl.default ?? '?'}; ` +
      `available ${info.congestionControl.available.join(', ')}; settable ` +
      `here ${info.congestionControl.settable.join(', ')}`,
    line('BPF cwnd clamp', info.bpfClamp),
  ].join('\n');
}

export function registerNativeCommands(program: Command): void {
  const native = program.command('native').description('socket control and the eBPF cwnd clamp');
  native
    .command('info')
    .description('what this host offers: TCP_INFO, pacing, congestion controls, the BPF clamp (checked, not assumed)')
    .option('--json', 'print JSON')
    .addHelpText('after', examples('npx trickle native info', 'npx trickle native info --json'))
    .action(async (opts: { json?: boolean }) => {
      const info = await nativeInfo();
      process.stdout.write(opts.json === true ? `${JSON.stringify(info, null, 2)}\n` : `${describe(info)}\n`);
    });
  native
    .command('setup')
    .description(
      'as root: mount bpffs/cgroup2 where needed, create the cgroup, load and attach the ' +
        'clamp program, pin its maps for an unprivileged origin',
    )
    .option('--cgroup <path>', 'cgroup v2 directory, or a name below the cgroup2 mount', defaultCgroupName)
    .option('--pin <dir>', 'bpffs directory for the pinned maps and link', defaultPinDir)
    .option('--user <name>', 'the user the origin runs as (gets the maps and the cgroup)')
    .option('--no-share-cgroup', "keep the cgroup root's: the origin is started inside it (systemd, a container)")
    .option(
      '--pod-uid <uid>',
      "Kubernetes: attach to this pod's cgroup (metadata.uid), found below --host-cgroup, instead of --cgroup",
    )
    .option(
      '--host-cgroup <dir>',
      "Kubernetes: the node's cgroup v2 hierarchy as mounted in the init container",
      '/host/cgroup',
    )
    .option(
      '--reap <dir>',
      "Kubernetes: first remove the pins of pods gone from this node (<dir>/<pod uid>, the pin directories' parent)",
    )
    .addHelpText(
      'after',
      examples(
        "# systemd (the unit's ExecStartPre): the unit's own cgroup, maps for the user trickle",
        'sudo npx trickle native setup --cgroup /sys/fs/cgroup/system.slice/trickle.service ' +
          '--pin /run/trickle/bpf --user trickle --no-share-cgroup',
        '# a development origin run as root in the cgroup "trickle"',
        'sudo npx trickle native setup',
        '# Kubernetes init container',
        'trickle native setup --pod-uid "$POD_UID" --pin /sys/fs/bpf/trickle/pod --reap ' +
          '/sys/fs/bpf/trickle --user 10002',
      ),
    )
    .action(
      async (opts: {
        cgroup: string;
        pin: string;
        user?: string;
        shareCgroup: boolean;
        podUid?: string;
        hostCgroup: string;
        reap?: string;
      }) => {
        if (opts.reap !== undefined) {
          const reaped = await reapPodPins(opts.reap, opts.hostCgroup);
          if (reaped.length > 0)
            process.stdout.write(
              `removed the clamp pins of ${reaped.length} pod(s) gone from this node: ${reaped.join(', ')}\n`,
            );
        }
        // A pod's cgroup is kubelet's: attached to, never given away.
        const cgroup = opts.podUid === undefined ? opts.cgroup : findPodCgroup(opts.hostCgroup, opts.podUid);
        const result = await setupClamp({
          cgroup,
          pinDir: opts.pin,
          shareCgroup: opts.shareCgroup && opts.podUid === undefined,
          ...(opts.user === undefined ? {} : { user: opts.user }),
        });
        process.stdout.write(
          `clamp ${result.attachedNow ? 'attached' : 'already attached'} to ` +
            `cgroup ${result.cgroupPath}; maps pinned ` +
            `in ${result.pinDir}${result.owner === undefined ? '' : ` for uid ${result.owner.uid}`}\n` +
            (isInCgroup(result.cgroupPath)
              ? ''
              : `start the origin inside the cgroup (before it listens), e.g. echo $$ ` +
                `> ${result.cgroupPath}/cgroup.procs in its launcher\n`),
        );
      },
    );
  native
    .command('teardown')
    .description('as root: detach the clamp program and remove its pinned maps and link')
    .option('--cgroup <path>', 'also remove this cgroup when empty')
    .option('--pin <dir>', 'bpffs directory of the pinned maps and link', defaultPinDir)
    .addHelpText(
      'after',
      examples(
        'sudo npx trickle native teardown',
        'sudo npx trickle native teardown --pin /run/trickle/bpf --cgroup /sys/fs/cgroup/system.slice/trickle.service',
      ),
    )
    .action(async (opts: { cgroup?: string; pin: string }) => {
      await teardownClamp({ pinDir: opts.pin, ...(opts.cgroup === undefined ? {} : { cgroup: opts.cgroup }) });
      process.stdout.write(`clamp detached; pins removed from ${opts.pin}\n`);
    });
}
