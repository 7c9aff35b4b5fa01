import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { findPodCgroup, isPodCgroupName, podsGone } from '../src/pod-cgroup.js';

const uid = '0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b';
const root = mkdtempSync(join(tmpdir(), 'trickle-pod-cgroup-'));
after(() => rmSync(root, { recursive: true, force: true }));

function tree(name: string, dirs: readonly string[]): string {
  const base = join(root, name);
  for (const dir of dirs) mkdirSync(join(base, dir), { recursive: true });
  return base;
}

describe('findPodCgroup', () => {
  it("finds the pod under the cgroupfs driver's layout", () => {
    const base = tree('cgroupfs', [
      'system.slice/containerd.service',
      'kubepods/besteffort/podaaaaaaaa-0000-0000-0000-000000000000',
      `kubepods/burstable/pod${uid}/c0ffee`,
    ]);
    assert.equal(findPodCgroup(base, uid), join(base, 'kubepods', 'burstable', `pod${uid}`));
  });

  it("finds the pod under the systemd driver's layout (dashes become underscores)", () => {
    const slice = `kubepods-guaranteed-pod${uid.replaceAll('-', '_')}.slice`;
    const base = tree('systemd', [
      'kubelet.slice',
      `kubepods.slice/kubepods-guaranteed.slice/${slice}/cri-containerd-1.scope`,
    ]);
    assert.equal(findPodCgroup(base, uid), join(base, 'kubepods.slice', 'kubepods-guaranteed.slice', slice));
    assert.equal(
      isPodCgroupName(`kubepods-besteffort-pod${uid}.slice`, uid),
      false,
      'the systemd driver never keeps the dashes',
    );
  });

  it('says which pod is missing, and refuses what is not a pod UID', () => {
    const base = tree('other', [`kubepods/burstable/pod${uid.replace('0f', '1f')}`]);
    assert.throws(() => findPodCgroup(base, uid), {
      code: 'NATIVE_ERR_CGROUP',
      message: new RegExp(`no cgroup for pod ${uid}`),
    });
    assert.throws(() => findPodCgroup(base, '../../etc'), { code: 'NATIVE_ERR_ARGUMENT' });
    assert.throws(() => findPodCgroup(join(root, 'absent'), uid), {
      code: 'NATIVE_ERR_CGROUP',
      message: /cannot read the cgroup hierarchy/,
    });
  });
});

describe('podsGone', () => {
  it('names the pin directories whose pods have no cgroup here, and leaves everything else', () => {
    const live = uid;
    const gone = 'aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee';
    const base = tree('reap', [`kubepods/burstable/pod${live}`]);
    assert.deepEqual(podsGone([live, gone, 'lost+found', 'README'], base), [gone]);
    assert.throws(
      () => podsGone([gone], join(root, 'absent')),
      { code: 'NATIVE_ERR_CGROUP', message: /cannot read/ },
      'an unreadable hierarchy reaps nothing',
    );
  });
});
