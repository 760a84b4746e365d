# One image for the web app (gunicorn + whitenoise) and the Celery worker.
FROM python:3.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
    DEBUG=false WEB_CONCURRENCY=3
RUN apt-get update \
 && apt-get install -y --no-install-recommends ffmpeg default-jre-headless libpq5 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --create-home --home-dir /home/app app
WORKDIR /app
COPY requirements.txt .
# CPU-only torch first: an unpinned torch pulls gigabytes of CUDA packages.
RUN pip install --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu \
 && pip install --no-cache-dir -r requirements.txt
COPY . .
# Static files are collected at build time (whitenoise serves them); a throwaway key satisfies the
# production settings, which refuse to start without a strong one.
RUN SECRET_KEY="$(python -c 'import secrets; print(secrets.token_urlsafe(50))')" ALLOWED_HOSTS=build \
    CELERY_BROKER_DIR=/tmp/build-broker python manage.py collectstatic --noinput
USER app
EXPOSE 8000
CMD ["sh", "-c", "python manage.py migrate --noinput && exec gunicorn -c config/gunicorn.py config.wsgi"]
