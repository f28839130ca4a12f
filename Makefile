# kreg's manual pages, made from the command lines' own definitions (`kreg man`):
#   make man                      # into ./target/man (man1: kreg and each subcommand; man8: kreg-agent)
#   make install-man              # into $(DESTDIR)$(MANDIR), by default /usr/local/share/man
MANDIR ?= /usr/local/share/man

.PHONY: man install-man

man:
	cargo build --bin kreg
	./target/debug/kreg man target/man

install-man:
	cargo build --bin kreg
	./target/debug/kreg man $(DESTDIR)$(MANDIR)
