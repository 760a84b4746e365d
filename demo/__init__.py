"""The simulated study (`manage.py demo`): synthesized clips, simulated captioning systems, annotators and raters,
a metric run and the dashboards computed from it. It sits above every app (it uses annotation, ratings and
metrics_bridge) and no app imports it; config reads the demo dataset's name to label its pages simulated.
"""
