# Sourced by Heroku (and Dokku's herokuish) in every dyno of a buildpack build, one-off dynos
# included: the buildpack leaves the binary in target/release, and this puts it on PATH, so
# `heroku run bindery logs -f` and `dokku run APP bindery token list` find it. The container
# image needs none of this (bindery is on its PATH).
export PATH="$HOME/target/release:$PATH"
