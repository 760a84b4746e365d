"""Static files under content-hashed names, so a browser may keep them for good.

whitenoise serves a file whose name carries its hash with `Cache-Control: max-age=315360000, public, immutable`:
a returning page then costs no static request (a crowd study's participant loads a dozen pages, and each page
without this revalidated every stylesheet and script once whitenoise's 60 s max-age had passed). A changed file
gets a new name, so nobody keeps an old copy.
"""

from whitenoise.storage import CompressedManifestStaticFilesStorage


class HashedStaticFilesStorage(CompressedManifestStaticFilesStorage):
    """whitenoise's compressed, hashed storage, falling back to the plain name when `collectstatic` has not
    written the file into the manifest.

    A production-mode server that serves no collected files (a test's runserver with DEBUG off, a checkout whose
    manifest predates a new file) must still render its pages: Django's strict manifest raises on every
    `{% static %}` of a missing name, and its non-strict mode hashes the file from STATIC_ROOT, which is not
    there either. `scripts/run`, the Docker image and the stack run `collectstatic`, so a served page names hashed
    files.
    """

    manifest_strict = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._urls: dict[str, str] = {}

    def url(self, name, force=False):
        """The file's URL, found once per process: the manifest is read when the storage is made and never changes
        after, and a page names a dozen files (each lookup cost a crowd's item page about 0.1 ms of CPU)."""
        if force:
            return super().url(name, force=True)
        url = self._urls.get(name)
        if url is None:
            url = self._urls[name] = super().url(name)
        return url

    def stored_name(self, name):
        if self.hash_key(name.split("?", 1)[0].split("#", 1)[0].strip()) not in self.hashed_files:
            return name
        return super().stored_name(name)
