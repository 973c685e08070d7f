# conf/local.mk: configuration, systemd unit and the demo model repository.

# The reference configuration; inferd reads it from here by default.  It is installed with
# the default model_repository this build has (the checked-in file names /usr/local's).
inferdconfdir = $(sysconfdir)/inferd
inferdconf_DATA = conf/inferd-installed.conf
conf/inferd-installed.conf: $(srcdir)/conf/inferd.conf inferd_paths.h
	@$(MKDIR_P) conf
	$(AM_V_GEN)sed -e 's|^# model_repository = .*|# model_repository = $(pkgdatadir)/models|' \
		$(srcdir)/conf/inferd.conf >$@.tmp && mv $@.tmp $@
CLEANFILES += conf/inferd-installed.conf
EXTRA_DIST += conf/inferd.conf
# Installed under its own name.
install-data-hook: install-inferd-conf
install-inferd-conf:
	mv -f '$(DESTDIR)$(inferdconfdir)/inferd-installed.conf' '$(DESTDIR)$(inferdconfdir)/inferd.conf'
uninstall-local:
	rm -f '$(DESTDIR)$(inferdconfdir)/inferd.conf'
.PHONY: install-inferd-conf

# The systemd unit, with the installed paths substituted.  Packagers point
# systemdsystemunitdir (and sysusersdir) at /lib/systemd/system etc. on the
# make command line; the defaults stay under $(prefix) so distcheck works.
systemdsystemunitdir = $(prefix)/lib/systemd/system
systemdsystemunit_DATA = conf/inferd.service
sysusersdir = $(prefix)/lib/sysusers.d
sysusers_DATA = conf/sysusers.d/inferd.conf

conf/inferd.service: $(srcdir)/conf/inferd.service.in Makefile inferd_paths.h
	@$(MKDIR_P) conf
	$(AM_V_GEN)sed -e 's|@sbindir[@]|$(sbindir)|g' -e 's|@sysconfdir[@]|$(sysconfdir)|g' \
		$(srcdir)/conf/inferd.service.in > $@.tmp && mv $@.tmp $@
# sysusers.d wants the file named after the package: inferd.conf.
conf/sysusers.d/inferd.conf: $(srcdir)/conf/inferd.sysusers
	@$(MKDIR_P) conf/sysusers.d
	$(AM_V_GEN)cp $(srcdir)/conf/inferd.sysusers $@
CLEANFILES += conf/inferd.service conf/sysusers.d/inferd.conf

# Scale-out (docs/DEPLOY.md): the one-daemon-per-GPU unit template is installed beside
# inferd.service; the nginx, KServe, container, Prometheus and Grafana files are examples.
# inferd-cpu@.service is the same template with device=cpu (a CPU build refuses cuda:N).
systemdsystemunit_DATA += conf/deploy/inferd@.service conf/deploy/inferd-cpu@.service
DEPLOY_UNIT_SED = sed -e 's|@sbindir[@]|$(sbindir)|g' -e 's|@sysconfdir[@]|$(sysconfdir)|g'
conf/deploy/inferd@.service: $(srcdir)/conf/deploy/inferd@.service.in Makefile inferd_paths.h
	@$(MKDIR_P) conf/deploy
	$(AM_V_GEN)$(DEPLOY_UNIT_SED) -e 's|@unit[@]|inferd|g' -e 's|@device[@]|cuda:%i|g' \
		-e 's|@port_base[@]|8100|g' -e 's|@purpose[@]|one inferd per GPU, for a box with several|' \
		$(srcdir)/conf/deploy/inferd@.service.in > $@.tmp && mv $@.tmp $@
conf/deploy/inferd-cpu@.service: $(srcdir)/conf/deploy/inferd@.service.in Makefile inferd_paths.h
	@$(MKDIR_P) conf/deploy
	$(AM_V_GEN)$(DEPLOY_UNIT_SED) -e 's|@unit[@]|inferd-cpu|g' -e 's|@device[@]|cpu|g' \
		-e 's|@port_base[@]|8200|g' -e 's|@purpose[@]|inferd on the CPU, several instances side by side|' \
		$(srcdir)/conf/deploy/inferd@.service.in > $@.tmp && mv $@.tmp $@
CLEANFILES += conf/deploy/inferd@.service conf/deploy/inferd-cpu@.service
EXTRA_DIST += conf/deploy/inferd@.service.in conf/deploy/inferd-upstream.conf \
	conf/deploy/kserve-servingruntime.yaml conf/deploy/kserve-inferenceservice.yaml \
	conf/deploy/Containerfile conf/deploy/prometheus.yml conf/deploy/grafana-dashboard.json

# The demo model, served by the default model_repository.
fashionmlpdir = $(pkgdatadir)/models/fashion-mlp
dist_fashionmlp_DATA = conf/models/fashion-mlp/model.json conf/models/fashion-mlp/model.safetensors

# The demo CNN (ONNX), served beside fashion-mlp.
fashioncnndir = $(pkgdatadir)/models/fashion-cnn
dist_fashioncnn_DATA = conf/models/fashion-cnn/model.json conf/models/fashion-cnn/model.onnx

EXTRA_DIST += conf/inferd.service.in conf/inferd.sysusers conf/models/train_fashion_mlp.py
EXTRA_DIST += conf/models/train_fashion_cnn.py conf/models/fashion_data.py

# Debian packaging (dpkg-buildpackage -us -uc -b in the unpacked dist tarball).
EXTRA_DIST += debian/changelog debian/control debian/copyright debian/rules debian/source/format \
	debian/not-installed debian/inferd.install debian/libinferd0.install \
	debian/libinferd-dev.install debian/inferd-tools.install debian/inferd.docs \
	debian/inferd.examples

# The inferd(8) man page, written by the daemon itself (its CONFIGURATION section is the config
# table's, as conf/inferd.conf and docs/CONFIG.md are) with this build's paths.
man8_MANS = inferd.8
inferd.8: inferd$(EXEEXT)
	$(AM_V_GEN)./inferd$(EXEEXT) --print-man >$@.tmp && mv $@.tmp $@
CLEANFILES += inferd.8
