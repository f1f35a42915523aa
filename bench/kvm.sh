# SPDX-License-Identifier: MIT
# Sourced by the bench scripts and .ci/run: why this machine cannot boot
# a guest under zvmm run, or nothing when it can.
#
# KVM is usable when /dev/kvm opens read-write (it may exist and still
# refuse: no module bound, no permission); without vmx or svm among the
# CPU flags no module could ever help, and that is said too.
kvm_unusable() {
	local why=""
	if [ ! -e /dev/kvm ]; then
		why="/dev/kvm does not exist"
	elif ! (exec 3<>/dev/kvm) 2>/dev/null; then
		why="/dev/kvm cannot be opened read-write"
	fi
	if [ -n "$why" ] && ! grep -qw -e vmx -e svm /proc/cpuinfo; then
		why+="; no vmx or svm in the CPU flags: no hardware virtualization, as in a VM without nested virtualization"
	fi
	echo "$why"
}
