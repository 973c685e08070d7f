# conf/local.mk: configuration, systemd unit and the demo model repository.

# The reference configuration; inferd reads it from here by default.
inferdconfdir = $(sysconfdir)/inferd
dist_inferdconf_DATA = conf/inferd.conf

# The systemd unit, with the installed paths substituted.  Packagers point
# systemdsystemunitdir (and sysusersdir) at /lib/systemd/system etc. on the
# make command line; the defaults stay under $(prefix) so distcheck works.
systemdsystemunitdir = $(prefix)/lib/systemd/system
systemdsystemunit_DATA = conf/inferd.service
sysusersdir = $(prefix)/lib/sysusers.d
sysusers_DATA = conf/sysusers.d/inferd.conf

conf/inferd.service: $(srcdir)/conf/inferd.service.in Makefile
	@$(MKDIR_P) conf
	$(AM_V_GEN)sed -e 's|@sbindir[@]|$(sbindir)|g' -e 's|@sysconfdir[@]|$(sysconfdir)|g' \
		$(srcdir)/conf/inferd.service.in > $@.tmp && mv $@.tmp $@
# sysusers.d wants the file named after the package: inferd.conf.
conf/sysusers.d/inferd.conf: $(srcdir)/conf/inferd.sysusers
	@$(MKDIR_P) conf/sysusers.d
	$(AM_V_GEN)cp $(srcdir)/conf/inferd.sysusers $@
CLEANFILES += conf/inferd.service conf/sysusers.d/inferd.conf

# The demo model, served by the default model_repository.
fashionmlpdir = $(pkgdatadir)/models/fashion-mlp
dist_fashionmlp_DATA = conf/models/fashion-mlp/model.json conf/models/fashion-mlp/model.safetensors

# The demo CNN (ONNX), served beside fashion-mlp.
fashioncnndir = $(pkgdatadir)/models/fashion-cnn
dist_fashioncnn_DATA = conf/models/fashion-cnn/model.json conf/models/fashion-cnn/model.onnx

EXTRA_DIST += conf/inferd.service.in conf/inferd.sysusers conf/models/train_fashion_mlp.py
EXTRA_DIST += conf/models/train_fashion_cnn.py
